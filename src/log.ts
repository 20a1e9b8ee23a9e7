import pino, { type DestinationStream, type Logger } from "pino";
import { z } from "zod";

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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, redact: { paths: redactPaths, censor: "[redacted]" }, base: { pid: process.pid } }, destination);
}
