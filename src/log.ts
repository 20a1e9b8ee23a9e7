import pino, { type DestinationStream, type Logger } from "pino";
import * as z from "zod";
import { secretForms } from "./config/redact.ts";

export const LogLevel = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);

/**
 * Paths that may hold a secret, censored wherever they appear in a log line. Code logs license *ids*
 * (`licenseId`), never keys; this is the net under that rule.
 */
const redactPaths = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["x-api-key"]',
  "license",
  "licenseKey",
  "license_key",
  "token",
  "apiKey",
  "*.license",
  "*.licenseKey",
  "*.license_key",
  "*.token",
  "*.apiKey",
];

/** pino's numeric level of `warn`: the tap sees this level and above. */
const WARN = 40;

export interface TappedLogEntry {
  level: number;
  /** The logged object before redaction: a listener must pick fields, never forward it whole. */
  fields: Record<string, unknown>;
  message: string;
}

/** Hands warnings and errors to a listener (the sidecar's own telemetry) as they are logged. */
export class WarningLogTap {
  #listener: ((entry: TappedLogEntry) => void) | undefined;

  listen(listener: ((entry: TappedLogEntry) => void) | undefined): void {
    this.#listener = listener;
  }

  /** `bindings`: a child logger's fields (`stream` of a shipper's logger, say), beneath the call's own. */
  tap(level: number, args: unknown[], bindings: Record<string, unknown>): void {
    if (level < WARN || !this.#listener) return;
    const [first, second] = args;
    const own =
      first instanceof Error ? { err: first } : typeof first === "object" && first !== null ? (first as Record<string, unknown>) : {};
    const fields = { ...bindings, ...own };
    const message = typeof first === "string" ? first : typeof second === "string" ? second : first instanceof Error ? first.message : "";
    this.#listener({ level, fields, message });
  }
}

/**
 * `secrets` (the sidecar's license key): censored in each written line whatever field or message holds them, as is
 * and JSON-escaped (how a line holds them), the net under redactPaths for text that came from elsewhere.
 */
export function createLogger(level: string, destination?: DestinationStream, tap?: WarningLogTap, secrets: readonly string[] = []): Logger {
  const forms = secretForms(secrets);
  return pino(
    {
      level,
      redact: { paths: redactPaths, censor: "[redacted]" },
      base: { pid: process.pid },
      hooks: {
        ...(tap && {
          logMethod(args, method, methodLevel) {
            tap.tap(methodLevel, args, this.bindings());
            return method.apply(this, args);
          },
        }),
        ...(forms.length > 0 && {
          streamWrite: (line: string) => forms.reduce((censored, form) => censored.replaceAll(form, "[redacted]"), line),
        }),
      },
    },
    destination,
  );
}
