import { ConfigError } from "../errors.ts";
import { describeIssues, isRecord, readKeyedFile, readYamlFile } from "./load.ts";
import { UsageMeasures } from "../protocol/usage-snapshot.ts";
import { AgentConfigFile } from "./schema.ts";

export type TelemetrySignal = "logs" | "metrics" | "traces";

/** The sidecar's configuration, parsed once at the edge: secrets read, env applied, defaults resolved. */
export interface AgentConfig extends Omit<AgentConfigFile, "licenseKeyFile" | "config"> {
  /** The license key; "" in offline mode. A secret: never log it. */
  licenseKey: string;
  /** Whether each operational signal may leave: the platform's config.telemetry.*, env, version default, offline. */
  telemetry: Record<TelemetrySignal, boolean>;
}

/** Env variables the platform's chart sets, and the config key each one overrides. */
const envKeys: { env: string; path: string[]; kind: "string" | "boolean" }[] = [
  { env: "BEACON_URL", path: ["beaconUrl"], kind: "string" },
  { env: "PLATFORM_LICENSE_KEY", path: ["licenseKey"], kind: "string" },
  { env: "EGRESS_OFFLINE", path: ["offline", "enabled"], kind: "boolean" },
  { env: "PHONE_HOME_USAGE_REPORTING_ENABLED", path: ["usageReporting"], kind: "boolean" },
  { env: "BEACON_LOGGING_ENABLED", path: ["config", "telemetry", "logs"], kind: "boolean" },
  { env: "BEACON_METRICS_ENABLED", path: ["config", "telemetry", "metrics"], kind: "boolean" },
  { env: "BEACON_TRACING_ENABLED", path: ["config", "telemetry", "traces"], kind: "boolean" },
];

function parseBoolean(text: string): boolean | undefined {
  const value = text.trim().toLowerCase();
  if (["true", "1", "yes", "on"].includes(value)) return true;
  if (["false", "0", "no", "off"].includes(value)) return false;
  return undefined;
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const part of path.slice(0, -1)) {
    if (!isRecord(node[part])) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[path.at(-1)!] = value;
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pa[i]! - pb[i]!;
  return 0;
}

/**
 * Loads the sidecar's YAML (`file`, else env EGRESS_CONFIG, else embedded defaults), applies env overrides
 * (env beats file) and `--listen`, checks the whole and throws one ConfigError naming every bad key.
 */
export function loadAgentConfig(options: { file?: string; env?: NodeJS.ProcessEnv; listen?: string } = {}): AgentConfig {
  const env = options.env ?? {};
  const file = options.file || env.EGRESS_CONFIG || undefined;
  const source = file ?? "embedded defaults";
  const raw = readYamlFile(file);
  if (!isRecord(raw)) throw new ConfigError(source, ["(top level): must be a mapping of keys"]);
  const merged: Record<string, unknown> = structuredClone(raw);
  const problems: string[] = [];
  for (const { env: name, path, kind } of envKeys) {
    const text = env[name];
    if (text === undefined || text === "") continue;
    const value = kind === "boolean" ? parseBoolean(text) : text;
    if (value === undefined) problems.push(`${name}: must be true or false`);
    else setPath(merged, path, value);
  }
  if (options.listen) merged.listen = options.listen;

  const parsed = AgentConfigFile.safeParse(merged);
  if (!parsed.success) throw new ConfigError(source, [...problems, ...describeIssues(parsed.error)]);
  const config = parsed.data;

  let licenseKey = config.licenseKey;
  if (!licenseKey && config.licenseKeyFile) {
    try {
      licenseKey = readKeyedFile("licenseKeyFile", config.licenseKeyFile).trim();
    } catch (err) {
      problems.push(...(err as ConfigError).problems);
    }
  }
  const offline = config.offline.enabled;
  if (offline) {
    if (!config.offline.licenseFile) problems.push("offline.licenseFile: required when offline.enabled is true");
    if (!config.offline.publicKeyFile) problems.push("offline.publicKeyFile: required when offline.enabled is true");
  } else if (!licenseKey && !problems.some((p) => p.startsWith("licenseKeyFile"))) {
    problems.push("licenseKey: required unless offline.enabled (set licenseKey, licenseKeyFile or PLATFORM_LICENSE_KEY)");
  }
  if (compareVersions(config.instanceVersion, "0.9.0") < 0) {
    problems.push(`instanceVersion: ${config.instanceVersion} is older than 0.9.0, the first version whose egress this sidecar handles`);
  }
  if (config.usage.source === "file" && !config.usage.file) problems.push("usage.file: required when usage.source is file");
  if (config.usage.source === "postgres") {
    if (!config.usage.postgres.url) problems.push("usage.postgres.url: required when usage.source is postgres");
    const missing = UsageMeasures.keyof().options.filter((measure) => !config.usage.postgres.queries[measure]);
    if (missing.length > 0) problems.push(`usage.postgres.queries: a query is required for every measure; missing ${missing.join(", ")}`);
  }
  if (config.retry.minBackoff > config.retry.maxBackoff) problems.push("retry.minBackoff: must not exceed retry.maxBackoff");
  if (problems.length > 0) throw new ConfigError(source, problems);

  const telemetryDefault = compareVersions(config.instanceVersion, "0.11.0") >= 0;
  const switches = config.config.telemetry;
  const { licenseKeyFile: _file, config: _platform, ...rest } = config;
  return {
    ...rest,
    licenseKey: offline ? "" : licenseKey,
    usageReporting: config.usageReporting && !offline,
    telemetry: {
      logs: !offline && (switches.logs ?? telemetryDefault),
      metrics: !offline && (switches.metrics ?? telemetryDefault),
      traces: !offline && (switches.traces ?? telemetryDefault),
    },
  };
}
