import { Command } from "commander";
import { resolveAgentConfig, type AgentConfig, type ValueSource } from "../config.ts";
import * as z from "zod";
import { AgentConfigFile, DEFAULT_SEND_CONCURRENCY } from "../config-schema.ts";
import { redactUrl } from "../../config/redact.ts";

/** Keys whose values are secrets or may carry one: shown as whether they are set, or with credentials removed. */
const shown: Record<string, (value: string) => string> = {
  licenseKey: (value) => (value ? "(set; hidden)" : ""),
  beaconUrl: redactUrl,
  "usage.postgres.url": redactUrl,
  "proxy.https": redactUrl,
  "proxy.http": redactUrl,
};

/** Keys whose default, when the file leaves them unset, is not one value. */
const unsetDefaults: Record<string, string> = {
  "limits.sendConcurrency": `${DEFAULT_SEND_CONCURRENCY.billing} for billing, ${DEFAULT_SEND_CONCURRENCY.others} for the others`,
};

export interface ConfigRow {
  key: string;
  value: string;
  source: ValueSource | string;
}

/** Each leaf key of the config schema with its default as one would write it ("1h", not 3600000). */
function schemaLeaves(schema: z.ZodType, path: string[], fallback: unknown, out: { path: string[]; fallback: unknown }[]): void {
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodPrefault) {
    schemaLeaves(schema.unwrap() as z.ZodType, path, schema._zod.def.defaultValue, out);
  } else if (schema instanceof z.ZodPipe && schema._zod.def.in instanceof z.ZodObject) {
    schemaLeaves(schema._zod.def.in as z.ZodType, path, fallback, out); // an object transformed after parsing (http)
  } else if (schema instanceof z.ZodObject) {
    for (const [key, child] of Object.entries(schema.shape)) schemaLeaves(child as z.ZodType, [...path, key], undefined, out);
  } else {
    out.push({ path, fallback });
  }
}

/** The value a key ends up with after offline mode and version defaults, when that is not what the key says. */
function resolvedSwitch(config: AgentConfig, key: string, value: unknown): { value: string; source: string } | undefined {
  const signal = /^config\.telemetry\.(logs|metrics|traces)$/.exec(key)?.[1] as keyof AgentConfig["telemetry"] | undefined;
  const effective = signal ? config.telemetry[signal] : key === "usageReporting" ? config.usageReporting : undefined;
  if (effective === undefined) return undefined;
  if (config.offline.enabled && value !== false) return { value: "false", source: "offline mode" };
  if (value === undefined) return { value: String(effective), source: `default for instanceVersion ${config.instanceVersion}` };
  return undefined;
}

/** Every key's effective value and where it came from (secrets hidden). */
export function describeConfig(options: { file?: string; env: NodeJS.ProcessEnv }): ConfigRow[] {
  const { config, written, source } = resolveAgentConfig(options);
  const leaves: { path: string[]; fallback: unknown }[] = [];
  schemaLeaves(AgentConfigFile, [], undefined, leaves);
  return leaves.map(({ path, fallback }): ConfigRow => {
    const key = path.join(".");
    const value = written(path) ?? fallback;
    const resolved = resolvedSwitch(config, key, value);
    if (resolved) return { key, ...resolved };
    if (value === undefined || value === null) return { key, value: unsetDefaults[key] ?? "", source: source(path) };
    const text = typeof value === "string" ? value : JSON.stringify(value);
    return { key, value: shown[key]?.(text) ?? text, source: source(path) };
  });
}

export function formatRows(rows: ConfigRow[]): string {
  const keyWidth = Math.max(...rows.map((row) => row.key.length));
  const valueWidth = Math.min(48, Math.max(...rows.map((row) => row.value.length)));
  return rows.map((row) => `${row.key.padEnd(keyWidth)}  ${row.value.padEnd(valueWidth)}  ${row.source}`.trimEnd()).join("\n");
}

async function validate(options: { config?: string; json?: boolean }): Promise<void> {
  // A ConfigError propagates: the CLI prints one line per problem and exits 2.
  const effective = describeConfig({ file: options.config, env: process.env });
  if (options.json) {
    process.stdout.write(`${JSON.stringify({ valid: true, values: effective }, null, 2)}\n`);
    return;
  }
  const file = options.config || process.env.EGRESS_CONFIG || "embedded defaults";
  process.stdout.write(`${file}: valid\n\n${formatRows(effective)}\n`);
}

export function validateCommand(): Command {
  return new Command("validate")
    .description(
      "check a sidecar config: exit 0 listing each value and its source (file, env, default), or exit 2 with one line per problem",
    )
    .option("--config <file>", "sidecar YAML config (default: env EGRESS_CONFIG, else embedded defaults)")
    .option("--json", "print the values as JSON")
    .action(validate);
}
