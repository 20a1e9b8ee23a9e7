import * as z from "zod";
import { Duration } from "../../config/units.ts";

/** The platform's published metrics (docs/PROTOCOL.md, "What operational telemetry carries"): forwarded by default. */
export const PLATFORM_METRICS = ["platform_http_requests_latency", "platform_http_requests_failed"] as const;

/** OpenTelemetry's instrument name syntax: exact names, so a pattern (`platform_*`) is refused rather than matching nothing. */
const METRIC_NAME = /^[A-Za-z][A-Za-z0-9_.\-/]{0,254}$/;
/** An HTTP field name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers the forwarder sets itself: a configured one would break the request's framing or encoding. */
const OWN_HEADERS = new Set(["content-type", "content-encoding", "content-length", "transfer-encoding", "host", "connection"]);

const Endpoint = z
  .string()
  .default("")
  .superRefine((url, ctx) => {
    if (url === "") return;
    // The URL is never echoed: a mistyped one may carry a credential.
    if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
      ctx.addIssue({ code: "custom", message: "must be an http:// or https:// URL (the collector's OTLP/HTTP base), or empty" });
      return;
    }
    const parsed = new URL(url);
    if (parsed.username || parsed.password) {
      ctx.addIssue({ code: "custom", message: "must not carry credentials: put them in telemetry.forward.headers" });
    }
    if (parsed.search || parsed.hash) ctx.addIssue({ code: "custom", message: "must have no query or fragment" });
  })
  .transform((url) => url.replace(/\/+$/, ""));

const Headers = z
  .record(z.string(), z.string())
  .default({})
  .superRefine((headers, ctx) => {
    for (const [name, value] of Object.entries(headers)) {
      if (!HEADER_NAME.test(name)) ctx.addIssue({ code: "custom", path: [name], message: "is not a valid HTTP header name" });
      else if (OWN_HEADERS.has(name.toLowerCase())) ctx.addIssue({ code: "custom", path: [name], message: "is set by the beacon itself" });
      // The value may be a secret: the problem is named, never the value.
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
      if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value))
        ctx.addIssue({ code: "custom", path: [name], message: "has a control character (a line break?)" });
    }
  });

/**
 * `telemetry.forward`: operational telemetry onward to the vendor's own OTLP/HTTP collector (docs/beacon.md,
 * "Forwarding telemetry"). Metrics deny by default: only the names listed leave; spans and log records leave as stored
 * (the sidecar's privacy filter already decided what of them leaves a customer's site).
 */
export const ForwardConfig = z
  .strictObject({
    endpoint: Endpoint,
    headers: Headers,
    metrics: z
      .array(z.string().regex(METRIC_NAME, { message: "must be an exact metric name (letters, digits, _ . - /; no patterns)" }))
      .default([...PLATFORM_METRICS]),
    retry: z
      .strictObject({
        minBackoff: Duration.prefault("1s"),
        maxBackoff: Duration.prefault("5m"),
        requestTimeout: Duration.prefault("30s"),
      })
      .prefault({}),
  })
  .superRefine((forward, ctx) => {
    if (forward.retry.minBackoff > forward.retry.maxBackoff) {
      ctx.addIssue({
        code: "custom",
        path: ["retry", "minBackoff"],
        message: "must not be longer than telemetry.forward.retry.maxBackoff",
      });
    }
  });
export type ForwardConfig = z.output<typeof ForwardConfig>;

/**
 * `BEACON_FORWARD_HEADERS` (a Secret's value in Kubernetes), in OTEL_EXPORTER_OTLP_HEADERS' form: `name=value` pairs
 * separated by commas, values percent-encoded. Its headers beat the file's of the same name. Undefined when malformed
 * (the config check then names the variable, never its text).
 */
export function parseHeaderList(text: string): Record<string, string> | undefined {
  const headers: Record<string, string> = {};
  for (const pair of text.split(",")) {
    if (pair.trim() === "") continue;
    const at = pair.indexOf("=");
    if (at <= 0) return undefined;
    try {
      headers[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      return undefined;
    }
  }
  return headers;
}
