import * as z from "zod";
import { httpLimitsSchema } from "../http/limits.ts";
import { ByteSize, Duration, ListenAddress } from "../config/units.ts";
import { LogLevel } from "../log.ts";
import { UsageMeasures } from "../protocol/usage-snapshot.ts";

const AttributeKeys = z.array(z.string().min(1, { message: "must not be empty" })).default([]);

// Words the privacy filter keeps in free text beside its own (letters first, then letters, digits, `_` or `-`): a word
// can only be added, and no number, address or token fits the shape.
const VocabularyWords = z
  .array(z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, { message: "must be a word: a letter, then up to 63 letters, digits, _ or -" }))
  .max(10_000)
  .default([]);

const ProxyUrl = z
  .string()
  .refine((url) => url === "" || (/^https?:\/\//.test(url) && URL.canParse(url)), { message: "must be an http(s) URL" })
  .default("");

const Version = z.string().regex(/^\d+\.\d+\.\d+$/, { message: "must be a version like 0.11.0" });

/**
 * Requests in flight per stream while deliveries succeed, when `limits.sendConcurrency` does not say. A billing
 * backlog drains about a fifth faster with 8 than with 4 (the beacon commits more batches together, bench/RESULTS.md);
 * telemetry batches are large (up to `limits.telemetryBatchBytes`): 2 of them in flight stay within a default beacon's
 * body budget (see telemetryBatchBytes) and relay as fast as 4 of 512 KiB, in fewer requests.
 */
export const DEFAULT_SEND_CONCURRENCY = { billing: 8, others: 2 } as const;

/** A stream's requests in flight while deliveries succeed: `limits.sendConcurrency` when set, else its default. */
export function sendConcurrencyOf(limits: { sendConcurrency?: number | null | undefined }, stream: string): number {
  return limits.sendConcurrency ?? DEFAULT_SEND_CONCURRENCY[stream === "billing" ? "billing" : "others"];
}

/** The sidecar's configuration file, as config/egress.yaml lists it; every key optional, defaults below. */
export const AgentConfigFile = z.strictObject({
  beaconUrl: z.url({ protocol: /^https?$/, message: "must be an http(s) URL" }).default("https://beacon.example.invalid"),
  // Lets beaconUrl be http:// to a host that is not loopback: the license key then crosses the network in clear.
  allowInsecureBeaconUrl: z.boolean().default(false),
  licenseKey: z.string().default(""),
  licenseKeyFile: z.string().default(""),
  offline: z
    .strictObject({
      enabled: z.boolean().default(false),
      licenseFile: z.string().default(""),
      publicKeyFile: z.string().default(""),
    })
    .prefault({}),
  instanceVersion: Version.default("0.11.0"),
  config: z
    .strictObject({
      telemetry: z
        .strictObject({ logs: z.boolean().optional(), metrics: z.boolean().optional(), traces: z.boolean().optional() })
        .prefault({}),
    })
    .prefault({}),
  usageReporting: z.boolean().default(true),
  usage: z
    .strictObject({
      // Where snapshot counts come from: pushed by the instance to POST /v1/usage/measures, or a JSON file.
      source: z.enum(["push", "file", "postgres"]).default("push"),
      file: z.string().default(""),
      postgres: z
        .strictObject({
          url: z.string().default(""), // a secret when it holds a password: never logged
          urlFile: z.string().default(""), // or read the URL from this file (a mounted Secret)
          statementTimeout: Duration.prefault("10s"),
          // One read-only SQL query per measure, each returning one non-negative integer.
          queries: z.partialRecord(UsageMeasures.keyof(), z.string().min(1, { message: "must not be empty" })).default({}),
        })
        .prefault({}),
    })
    .prefault({}),
  listen: ListenAddress.prefault("127.0.0.1:4318"),
  // A second listener serving GET /metrics alone (e.g. 0.0.0.0:9464 for Prometheus on the pod's address); "" for none.
  metrics: z.strictObject({ listen: z.union([z.literal(""), ListenAddress]).default("") }).prefault({}),
  dataDir: z.string().min(1).default("./data"),
  intervals: z
    .strictObject({
      licenseVerify: Duration.prefault("1h"),
      usageSnapshot: Duration.prefault("24h"),
      flush: Duration.prefault("5s"),
    })
    .prefault({}),
  limits: z
    .strictObject({
      telemetryMaxBytes: ByteSize.prefault("256MiB"),
      batchTransactions: z.int().min(1).max(10_000).default(500),
      // Unset or null (~): each stream's own (DEFAULT_SEND_CONCURRENCY).
      sendConcurrency: z.int().min(1).max(16).nullish(),
      bodyLimit: ByteSize.prefault("16MiB"),
      // A default beacon charges a telemetry body about 3 times its bytes (ITEM_COST per object) against its 8 MiB shared
      // body budget: 2 batches of 1 MiB in flight fit; 4 of 4 MiB did not, and three of four were refused (503).
      telemetryBatchBytes: ByteSize.prefault("1MiB"),
    })
    .prefault({}),
  // The local API's HTTP server: connections, timeouts and the memory bodies may take (src/http/limits.ts).
  // Billing intake (transactions, usage counts) has a body budget of its own: telemetry filling the shared one never refuses it.
  http: httpLimitsSchema({ maxConnections: 512, reservedConnections: 64, bodyBytesInFlight: "16MiB", bodyBudgets: { billing: "16MiB" } }),
  privacy: z
    .strictObject({
      // Attribute keys allowed to leave beyond the built-in allowlist, per position. Never set by the sender.
      allowAttributes: z
        .strictObject({ resource: AttributeKeys, metrics: AttributeKeys, spans: AttributeKeys, logs: AttributeKeys })
        .prefault({}),
      logSeverity: z.enum(["warning", "error"]).default("warning"),
      slowSpan: Duration.prefault("1s"),
      vocabulary: VocabularyWords,
    })
    .prefault({}),
  selfTelemetry: z
    .strictObject({
      enabled: z.boolean().default(true),
      env: z.string().min(1).default("self-hosted"),
      exportInterval: Duration.prefault("60s"),
    })
    .prefault({}),
  license: z.strictObject({ gracePeriod: Duration.prefault("72h") }).prefault({}),
  retry: z
    .strictObject({
      minBackoff: Duration.prefault("1s"),
      maxBackoff: Duration.prefault("5m"),
      requestTimeout: Duration.prefault("30s"),
    })
    .prefault({}),
  retention: z.strictObject({ completed: Duration.prefault("7d") }).prefault({}),
  audit: z
    .strictObject({
      retention: Duration.prefault("30d"),
      // Keep each request body too (license key redacted): what left, byte for byte, for a reviewer.
      keepBodies: z.boolean().default(false),
    })
    .prefault({}),
  // Forward proxy for beacon traffic; normally from env HTTPS_PROXY / HTTP_PROXY / NO_PROXY.
  proxy: z
    .strictObject({
      https: ProxyUrl,
      http: ProxyUrl,
      noProxy: z.string().default(""),
    })
    .prefault({}),
  // Extra certificate authorities (PEM bundle) trusted for the beacon, beside the system's and NODE_EXTRA_CA_CERTS.
  tls: z.strictObject({ caFile: z.string().default("") }).prefault({}),
  logLevel: LogLevel.default("info"),
});
export type AgentConfigFile = z.output<typeof AgentConfigFile>;
