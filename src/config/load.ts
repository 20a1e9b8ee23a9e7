import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import { ConfigError } from "../errors.ts";

/** "a.b[2].c" for a zod issue path: the key name an operator looks for in the YAML. */
export function keyName(path: readonly PropertyKey[]): string {
  let name = "";
  for (const part of path) {
    if (typeof part === "number") name += `[${part}]`;
    else name += name === "" ? String(part) : `.${String(part)}`;
  }
  return name || "(top level)";
}

/** One line per problem, each naming the key, e.g. `licenses[0].expiresAt: must be ...`; `schema` adds "did you mean". */
export function describeIssues(error: z.ZodError, schema?: z.ZodType): string[] {
  return error.issues.flatMap((issue) => {
    if (issue.code === "unrecognized_keys") {
      const known = schema ? objectKeysAt(schema, issue.path) : [];
      return issue.keys.map((key) => `${keyName([...issue.path, key])}: unknown key${didYouMean(key, known)}`);
    }
    // YAML reads `0.10` as the number 0.1 and `1.0` as 1: the fix is quotes, which "expected string" does not say.
    const quote =
      issue.code === "invalid_type" && issue.expected === "string" && /received (number|boolean)/.test(issue.message)
        ? ` (YAML read it as a ${issue.message.match(/received (\w+)/)![1]}: quote it as written, e.g. ${String(issue.path.at(-1))}: "0.10")`
        : "";
    return [`${keyName(issue.path)}: ${issue.message}${quote}`];
  });
}

/** The keys an object schema at `path` of `schema` declares (through defaults, optionals and pipes). */
function objectKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let node: unknown = schema;
  const def = (n: unknown) => (n as { _zod?: { def?: Record<string, unknown> } })?._zod?.def;
  const unwrap = (n: unknown): unknown => {
    for (let d = def(n); d && ["default", "prefault", "optional", "nullable", "pipe", "readonly"].includes(String(d.type)); d = def(n))
      n = d.type === "pipe" ? d.in : d.innerType;
    return n;
  };
  for (const part of path) {
    const d = def(unwrap(node));
    node = d?.type === "object" ? (d.shape as Record<string, unknown>)[String(part)] : d?.type === "array" ? d.element : undefined;
  }
  const d = def(unwrap(node));
  return d?.type === "object" ? Object.keys(d.shape as object) : [];
}

/** ", did you mean beaconUrl?" for a key that differs from a known one by case or up to two edits; "" otherwise. */
export function didYouMean(key: string, known: readonly string[]): string {
  const best = known
    .map((candidate) => ({ candidate, distance: editDistance(key.toLowerCase(), candidate.toLowerCase()) }))
    .filter(({ distance }) => distance <= Math.min(2, Math.floor(key.length / 3)))
    .sort((a, b) => a.distance - b.distance)[0];
  return best ? `; did you mean ${best.candidate}?` : "";
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}

/** Reads a file a config key names; a failure is a ConfigError naming that key and the OS reason. */
export function readKeyedFile(key: string, path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(key, [`${key}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`]);
  }
}

/** Reads a YAML file into a plain object; an absent path gives `{}` (embedded defaults). */
export function readYamlFile(path: string | undefined): unknown {
  if (!path) return {};
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(path, [`cannot read the file: ${(err as NodeJS.ErrnoException).code ?? String(err)}`]);
  }
  try {
    return parseYaml(text) ?? {};
  } catch (err) {
    const { message, linePos } = err as Error & { linePos?: [{ line: number }] };
    const reason = message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
    const line = linePos?.[0].line;
    if (!line) throw new ConfigError(path, [`not valid YAML: ${reason}`]);
    // An unclosed quote is noticed where the file ends: the line that opened it is the one to show.
    const quote = /Missing closing (["'])quote/.exec(reason)?.[1];
    const opened = quote ? text.split(/\r?\n/).findIndex((l) => l.split(quote).length % 2 === 0) + 1 : 0;
    const at = opened > 0 ? opened : line;
    throw new ConfigError(path, [
      `not valid YAML: ${reason} (noticed at line ${at}; the mistake may be on the line before or after):`,
      ...yamlFrame(text, at),
    ]);
  }
}

/**
 * The lines around a YAML error with their keys and indentation but not their values: where the mistake is shows
 * in the indentation and the keys, and a value may be a secret (a license key with a missing quote).
 */
function yamlFrame(text: string, line: number): string[] {
  const lines = text.split(/\r?\n/);
  const frame: string[] = [];
  for (let n = Math.max(1, line - 2); n <= Math.min(lines.length, line + 1); n++) {
    const source = lines[n - 1]!;
    if (source.trim() === "") continue;
    const shape = /^(\s*(?:- )?)([^:#]*)(:?)/.exec(source)!;
    const key = shape[3] ? `${shape[1]}${shape[2]}:${source.length > shape[0].length ? " …" : ""}` : `${shape[1]}…`;
    frame.push(`${n === line ? ">" : " "} ${String(n).padStart(4)} | ${key}`);
  }
  return frame;
}

/** Parses raw configuration with a schema, or throws a ConfigError listing every problem by key. */
export function parseConfig<S extends z.ZodType>(schema: S, raw: unknown, source: string): z.output<S> {
  const result = schema.safeParse(raw);
  if (!result.success) throw new ConfigError(source, describeIssues(result.error, schema));
  return result.data;
}
