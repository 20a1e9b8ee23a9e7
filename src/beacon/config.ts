import * as z from "zod";
import { parseConfig, readYamlFile } from "../config/load.ts";
import { isRecord, Timestamp } from "../protocol/common.ts";
import { ByteSize, Duration, ListenAddress } from "../config/units.ts";
import { httpLimitsSchema } from "../http/limits.ts";
import { LogLevel } from "../log.ts";
import { LicenseId } from "../protocol/license.ts";
import { ApiKeyEntry } from "../http/api-keys.ts";
import { ConfigError } from "../errors.ts";
import { hashLicenseKey } from "./licenses.ts";
import { ForwardConfig, parseHeaderList } from "./forward/config.ts";

const BeaconLicense = z
  .strictObject({
    key: z.string().min(12, { message: "must be at least 12 characters" }).optional(),
    keySha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, { message: "must be the lower-case hex SHA-256 of the key" })
      .optional(),
    id: LicenseId,
    organizationId: z.uuid({ message: "must be a UUID" }),
    expiresAt: Timestamp,
    seats: z.int().nonnegative(),
    // Whether `beacon issue-offline-license` may sign one for it; licenses of this file could always be.
    offlineAllowed: z.boolean().default(true),
  })
  .refine((l) => (l.key === undefined) !== (l.keySha256 === undefined), {
    message: "give exactly one of key or keySha256",
    path: ["key"],
  });
export type BeaconLicenseConfig = z.output<typeof BeaconLicense>;

export const BeaconConfig = z
  .strictObject({
    listen: ListenAddress.prefault("127.0.0.1:8080"),
    dataDir: z.string().min(1).default("./data/beacon"),
    signingKeyFile: z.string().default(""),
    tokenTtl: Duration.prefault("1h"),
    bodyLimit: ByteSize.prefault("8MiB"),
    // Connections, timeouts and the memory bodies may take (src/http/limits.ts): many customers, few bodies at once.
    // Bodies are charged to a budget by who sent them: billing and usage with a valid bearer token, verify, anonymous
    // billing and usage (no token), and telemetry in the shared one; none can take another's room.
    http: httpLimitsSchema({
      maxConnections: 4096,
      reservedConnections: 256,
      bodyBytesInFlight: "8MiB",
      bodyBudgets: { billing: "8MiB", verify: "1MiB", anonymous: "2MiB" },
    }),
    logLevel: LogLevel.default("info"),
    // PostgreSQL for several replicas (env BEACON_DATABASE_URL beats it): postgres://user:password@host:5432/db.
    // Empty: beacon.db (SQLite) in dataDir, the embedded default.
    database: z
      .strictObject({
        url: z
          .string()
          .default("")
          .refine((url) => url === "" || /^postgres(ql)?:\/\//.test(url), { message: "must be a postgres:// URL, or empty for SQLite" }),
        poolSize: z.int().min(1).max(200).default(10),
      })
      .prefault({}),
    licenses: z.array(BeaconLicense).default([]),
    // The vendor's admin listener (src/beacon/admin/): the license API, on an address of its own. Empty listen: off.
    admin: z
      .strictObject({
        listen: z.union([z.literal(""), ListenAddress]).prefault("127.0.0.1:8081"),
        // Keys for X-Api-Key (or sha256:<hex> of one); env BEACON_ADMIN_API_KEY adds one.
        apiKeys: z.array(ApiKeyEntry).default([]),
        // An instance not seen for this long is `silent` (GET /v1/admin/instances).
        silentAfter: Duration.prefault("26h"),
      })
      .prefault({}),
    // Serve HTTPS with this certificate and key (PEM); both or neither. Empty: plain HTTP (behind a TLS proxy).
    tls: z.strictObject({ certFile: z.string().default(""), keyFile: z.string().default("") }).prefault({}),
    // Operational telemetry onward to the vendor's own OTLP collector (src/beacon/forward/config.ts).
    telemetry: z.strictObject({ forward: ForwardConfig.prefault({}) }).prefault({}),
  })
  .superRefine((config, ctx) => {
    if (Boolean(config.tls.certFile) !== Boolean(config.tls.keyFile)) {
      ctx.addIssue({
        code: "custom",
        path: ["tls", config.tls.certFile ? "keyFile" : "certFile"],
        message: "give both tls.certFile and tls.keyFile, or neither",
      });
    }
    const seen = new Set<string>();
    // One key, one license: a shared key would send one customer's verification and billing to the other license.
    const byKeyHash = new Map<string, number>();
    config.licenses.forEach((license, i) => {
      if (seen.has(license.id)) {
        ctx.addIssue({ code: "custom", path: ["licenses", i, "id"], message: `duplicate license id "${license.id}"` });
      }
      seen.add(license.id);
      const keyHash = license.keySha256 ?? (license.key === undefined ? undefined : hashLicenseKey(license.key));
      if (keyHash === undefined) return; // neither given: reported by the entry's own check
      const first = byKeyHash.get(keyHash);
      if (first === undefined) byKeyHash.set(keyHash, i);
      else {
        const form = license.keySha256 === undefined ? "key" : "keySha256";
        const other = config.licenses[first]!;
        const otherForm = other.keySha256 === undefined ? "key" : "keySha256";
        ctx.addIssue({
          code: "custom",
          path: ["licenses", i, form],
          message: `the same key as licenses[${first}].${otherForm} (${other.id}): each license needs a key of its own`,
        });
      }
    });
  });
export type BeaconConfig = z.output<typeof BeaconConfig>;

/**
 * Loads the beacon's YAML (or embedded defaults when no file is given); `--listen` beats the file, and so do
 * `BEACON_DATABASE_URL` (a Secret's value in Kubernetes) its `database.url`, `BEACON_SIGNING_KEY_FILE` (where a
 * Secret is mounted) its `signingKeyFile` and `BEACON_FORWARD_HEADERS` the same names of `telemetry.forward.headers`:
 * what every replica shares comes in the same way. `BEACON_ADMIN_API_KEY` adds an admin key.
 */
export function loadBeaconConfig(
  file: string | undefined,
  overrides: { listen?: string | undefined } = {},
  env: NodeJS.ProcessEnv = process.env,
): BeaconConfig {
  const raw = readYamlFile(file) ?? {};
  let merged = overrides.listen && isRecord(raw) ? { ...raw, listen: overrides.listen } : raw;
  const databaseUrl = env.BEACON_DATABASE_URL;
  if (databaseUrl && isRecord(merged)) {
    const database = isRecord(merged.database) ? merged.database : {};
    merged = { ...merged, database: { ...database, url: databaseUrl } };
  }
  if (env.BEACON_SIGNING_KEY_FILE && isRecord(merged)) merged = { ...merged, signingKeyFile: env.BEACON_SIGNING_KEY_FILE };
  if (env.BEACON_FORWARD_HEADERS && isRecord(merged)) merged = withForwardHeaders(merged, env.BEACON_FORWARD_HEADERS);
  const config = parseConfig(BeaconConfig, merged, file ?? "embedded defaults");
  if (env.BEACON_ADMIN_API_KEY) {
    const key = ApiKeyEntry.safeParse(env.BEACON_ADMIN_API_KEY);
    if (!key.success) throw new ConfigError("env BEACON_ADMIN_API_KEY", [`env BEACON_ADMIN_API_KEY: ${key.error.issues[0]!.message}`]);
    config.admin.apiKeys.push(key.data);
  }
  // An admin listener asked for in the file with no key to open it is a mistake worth stopping for; the default
  // address without a key just stays closed (startBeacon logs so).
  const admin = isRecord(merged) && isRecord(merged.admin) ? merged.admin : {};
  if (typeof admin.listen === "string" && admin.listen !== "" && config.admin.apiKeys.length === 0)
    throw new ConfigError(file ?? "embedded defaults", [
      "admin.apiKeys: admin.listen is set but no admin key is: add one (or its sha256:<hex>), or set env BEACON_ADMIN_API_KEY",
    ]);
  return config;
}

/** The file's `telemetry.forward.headers` with those of BEACON_FORWARD_HEADERS over them. */
function withForwardHeaders(raw: Record<string, unknown>, text: string): Record<string, unknown> {
  const fromEnv = parseHeaderList(text);
  if (fromEnv === undefined) {
    throw new ConfigError("BEACON_FORWARD_HEADERS", [
      "BEACON_FORWARD_HEADERS: must be name=value pairs separated by commas, values percent-encoded (as OTEL_EXPORTER_OTLP_HEADERS)",
    ]);
  }
  const telemetry = isRecord(raw.telemetry) ? raw.telemetry : {};
  const forward = isRecord(telemetry.forward) ? telemetry.forward : {};
  const headers = isRecord(forward.headers) ? forward.headers : {};
  return { ...raw, telemetry: { ...telemetry, forward: { ...forward, headers: { ...headers, ...fromEnv } } } };
}
