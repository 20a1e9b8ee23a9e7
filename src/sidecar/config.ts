import { ConfigError } from "../errors.ts";
import { isRecord } from "../protocol/common.ts";
import { describeIssues, readKeyedFile, readYamlFile } from "../config/load.ts";
import type { OtlpSignal } from "../protocol/otlp.ts";
import { UsageMeasures } from "../protocol/usage-snapshot.ts";
import { insecureBeaconHost } from "./beacon-url.ts";
import { AgentConfigFile } from "./config-schema.ts";

/** The sidecar's configuration, parsed once at the edge: secrets read, env applied, defaults resolved. */
export interface AgentConfig extends Omit<AgentConfigFile, "licenseKeyFile" | "config"> {
  /** The license key; "" in offline mode. A secret: never log it. */
  licenseKey: string;
  /** PEM certificates of `tls.caFile`, read at the edge. */
  extraCa: string | undefined;
  /** Whether each operational signal may leave: the platform's config.telemetry.*, env, version default, offline. */
  telemetry: Record<OtlpSignal, boolean>;
}

/** Env variables the platform's chart sets, and the config key each one overrides. */
const envKeys: { env: string; path: string[]; kind: "string" | "boolean" }[] = [
  { env: "BEACON_URL", path: ["beaconUrl"], kind: "string" },
  { env: "EGRESS_ALLOW_INSECURE_BEACON_URL", path: ["allowInsecureBeaconUrl"], kind: "boolean" },
  { env: "PLATFORM_LICENSE_KEY", path: ["licenseKey"], kind: "string" },
  { env: "EGRESS_OFFLINE", path: ["offline", "enabled"], kind: "boolean" },
  { env: "PHONE_HOME_USAGE_REPORTING_ENABLED", path: ["usageReporting"], kind: "boolean" },
  { env: "BEACON_LOGGING_ENABLED", path: ["config", "telemetry", "logs"], kind: "boolean" },
  { env: "BEACON_METRICS_ENABLED", path: ["config", "telemetry", "metrics"], kind: "boolean" },
  { env: "BEACON_TRACING_ENABLED", path: ["config", "telemetry", "traces"], kind: "boolean" },
  // Lower case after upper case, so that it wins, as in curl.
  { env: "HTTPS_PROXY", path: ["proxy", "https"], kind: "string" },
  { env: "https_proxy", path: ["proxy", "https"], kind: "string" },
  { env: "HTTP_PROXY", path: ["proxy", "http"], kind: "string" },
  { env: "http_proxy", path: ["proxy", "http"], kind: "string" },
  { env: "NO_PROXY", path: ["proxy", "noProxy"], kind: "string" },
  { env: "no_proxy", path: ["proxy", "noProxy"], kind: "string" },
];

/** Where a value came from: an env variable, `--listen`, the file, or the default. */
export type ValueSource = `env ${string}` | "--listen" | "file" | "default";

export interface ResolvedAgentConfig {
  config: AgentConfig;
  /** A key's value as written in the file, env or `--listen`; undefined when it is left to its default. */
  written(path: readonly string[]): unknown;
  source(path: readonly string[]): ValueSource;
}

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
export function loadAgentConfig(options: LoadOptions = {}): AgentConfig {
  return resolveAgentConfig(options).config;
}

function readSecretFile(key: string, path: string, problems: string[]): string {
  try {
    return readKeyedFile(key, path).trim();
  } catch (err) {
    problems.push(...(err as ConfigError).problems);
    return "";
  }
}

export interface LoadOptions {
  file?: string;
  env?: NodeJS.ProcessEnv;
  listen?: string;
  /** For commands that never send (preview): the license key may be absent. */
  keyOptional?: boolean;
}

/** loadAgentConfig, also telling where each value came from. */
export function resolveAgentConfig(options: LoadOptions = {}): ResolvedAgentConfig {
  const env = options.env ?? {};
  const file = options.file || env.EGRESS_CONFIG || undefined;
  const origin = file ?? "embedded defaults";
  const raw = readYamlFile(file);
  if (!isRecord(raw)) throw new ConfigError(origin, ["(top level): must be a mapping of keys"]);
  const merged: Record<string, unknown> = structuredClone(raw);
  const problems: string[] = [];
  const sources = new Map<string, ValueSource>();
  for (const { env: name, path, kind } of envKeys) {
    const text = env[name];
    if (text === undefined || text === "") continue;
    const value = kind === "boolean" ? parseBoolean(text) : text;
    if (value === undefined) problems.push(`${name}: must be true or false`);
    else {
      setPath(merged, path, value);
      sources.set(path.join("."), `env ${name}`);
    }
  }
  if (options.listen) {
    merged.listen = options.listen;
    sources.set("listen", "--listen");
  }
  const written = (path: readonly string[]): unknown => {
    let node: unknown = merged;
    for (const part of path) node = isRecord(node) ? node[part] : undefined;
    return node;
  };
  const source = (path: readonly string[]): ValueSource =>
    sources.get(path.join(".")) ?? (written(path) === undefined ? "default" : "file");

  const parsed = AgentConfigFile.safeParse(merged);
  if (!parsed.success) {
    // The keys that did parse may break the rules below too: check them with the bad sections at their defaults,
    // so that one run lists every mistake (a bad beaconUrl must not hide an old instanceVersion).
    const bad = new Set(
      parsed.error.issues.flatMap((i) => (i.path.length > 0 ? [String(i.path[0])] : i.code === "unrecognized_keys" ? i.keys : [])),
    );
    const rest = AgentConfigFile.safeParse(Object.fromEntries(Object.entries(merged).filter(([key]) => !bad.has(key))));
    const together = rest.success
      ? checkTogether(rest.data, [], options.keyOptional).problems.filter((p) => !bad.has(p.split(/[.:[]/)[0]!))
      : [];
    throw new ConfigError(origin, [...problems, ...describeIssues(parsed.error, AgentConfigFile), ...together]);
  }
  const config = parsed.data;
  const { licenseKey, extraCa } = checkTogether(config, problems, options.keyOptional);
  if (problems.length > 0) throw new ConfigError(origin, problems);

  const offline = config.offline.enabled;
  const telemetryDefault = compareVersions(config.instanceVersion, "0.11.0") >= 0;
  const switches = config.config.telemetry;
  const { licenseKeyFile: _file, config: _platform, ...rest } = config;
  const agent: AgentConfig = {
    ...rest,
    licenseKey: offline ? "" : licenseKey,
    extraCa,
    usageReporting: config.usageReporting && !offline,
    telemetry: {
      logs: !offline && (switches.logs ?? telemetryDefault),
      metrics: !offline && (switches.metrics ?? telemetryDefault),
      traces: !offline && (switches.traces ?? telemetryDefault),
    },
  };
  return { config: agent, written, source };
}

function readCaFile(path: string, problems: string[]): string | undefined {
  let pem: string;
  try {
    pem = readKeyedFile("tls.caFile", path);
  } catch (err) {
    problems.push(...(err as ConfigError).problems);
    return undefined;
  }
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) problems.push(`tls.caFile: ${path} holds no PEM certificate`);
  return pem;
}

/** The rules between keys, and the secrets the keys name, read; adds a line per problem to `problems`. */
function checkTogether(
  config: AgentConfigFile,
  problems: string[],
  keyOptional = false,
): { licenseKey: string; extraCa: string | undefined; problems: string[] } {
  let licenseKey = config.licenseKey;
  if (!licenseKey && config.licenseKeyFile) licenseKey = readSecretFile("licenseKeyFile", config.licenseKeyFile, problems);
  const postgres = config.usage.postgres;
  if (!postgres.url && postgres.urlFile) postgres.url = readSecretFile("usage.postgres.urlFile", postgres.urlFile, problems);
  const extraCa = config.tls.caFile ? readCaFile(config.tls.caFile, problems) : undefined;
  const offline = config.offline.enabled;
  if (offline) {
    if (!config.offline.licenseFile) problems.push("offline.licenseFile: required when offline.enabled is true");
    if (!config.offline.publicKeyFile) problems.push("offline.publicKeyFile: required when offline.enabled is true");
  } else if (!licenseKey && !keyOptional && !problems.some((p) => p.startsWith("licenseKeyFile"))) {
    problems.push("licenseKey: required unless offline.enabled (set licenseKey, licenseKeyFile or PLATFORM_LICENSE_KEY)");
  }
  const insecureHost = offline || config.allowInsecureBeaconUrl ? undefined : insecureBeaconHost(config.beaconUrl);
  if (insecureHost) {
    problems.push(
      `beaconUrl: http:// to ${insecureHost} would send the license key in clear; use https://, or http:// to a loopback host (127.0.0.1, ::1, localhost), or accept it with allowInsecureBeaconUrl: true (env EGRESS_ALLOW_INSECURE_BEACON_URL=true)`,
    );
  }
  if (compareVersions(config.instanceVersion, "0.9.0") < 0) {
    problems.push(`instanceVersion: ${config.instanceVersion} is older than 0.9.0, the first version whose egress this sidecar handles`);
  }
  if (config.usage.source === "file" && !config.usage.file) problems.push("usage.file: required when usage.source is file");
  if (config.usage.source === "postgres") {
    if (!postgres.url && !postgres.urlFile)
      problems.push("usage.postgres.url: required when usage.source is postgres (or usage.postgres.urlFile)");
    const missing = UsageMeasures.keyof().options.filter((measure) => !config.usage.postgres.queries[measure]);
    if (missing.length > 0) problems.push(`usage.postgres.queries: a query is required for every measure; missing ${missing.join(", ")}`);
  }
  const metricsListen = config.metrics.listen;
  if (metricsListen && metricsListen.port !== 0 && metricsListen.port === config.listen.port && metricsListen.host === config.listen.host) {
    problems.push("metrics.listen: must differ from listen (the local API already serves /metrics there)");
  }
  if (config.retry.minBackoff > config.retry.maxBackoff) problems.push("retry.minBackoff: must not exceed retry.maxBackoff");
  return { licenseKey, extraCa, problems };
}
