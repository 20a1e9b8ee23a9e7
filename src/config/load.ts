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

/** One line per problem, each naming the key, e.g. `licenses[0].expiresAt: must be ...`. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.flatMap((issue) =>
    issue.code === "unrecognized_keys"
      ? issue.keys.map((key) => `${keyName([...issue.path, key])}: unknown key`)
      : [`${keyName(issue.path)}: ${issue.message}`],
  );
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
    throw new ConfigError(path, [`not valid YAML: ${(err as Error).message.split("\n")[0]}`]);
  }
}

/** Parses raw configuration with a schema, or throws a ConfigError listing every problem by key. */
export function parseConfig<S extends z.ZodType>(schema: S, raw: unknown, source: string): z.output<S> {
  const result = schema.safeParse(raw);
  if (!result.success) throw new ConfigError(source, describeIssues(result.error));
  return result.data;
}
