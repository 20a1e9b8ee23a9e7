import * as z from "zod";
import { Timestamp } from "./common.ts";

/** What the sidecar sent where: one entry per request to the beacon. Never holds a secret. */
export const AuditEntry = z.object({
  id: z.int(),
  at: z.string(),
  stream: z.string(),
  /** The full URL, credentials removed. */
  destination: z.string(),
  path: z.string(),
  records: z.int(),
  bytes: z.int(),
  /** SHA-256 (hex) of the request body exactly as it was sent. */
  sha256: z.string(),
  /** The beacon's HTTP status; null when no answer came (unreachable, timeout). */
  status: z.int().nullable(),
  error: z.string().nullable(),
  durationMs: z.int(),
  /** With audit.keepBodies: the body as sent, license key redacted. */
  body: z.string().optional(),
});
export type AuditEntry = z.infer<typeof AuditEntry>;

/** A query-string number in plain decimal digits (Number() would also take `0x10`, `1e3` or blanks). */
const decimal = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,15}$/, { message: "must be a whole number in decimal digits" })
    .transform(Number)
    .pipe(z.int().min(min).max(max));

/** GET /v1/audit query. */
export const AuditQuery = z.strictObject({
  since: Timestamp.optional(),
  stream: z.enum(["license", "billing", "metrics", "traces", "logs", "usage"]).optional(),
  /** Entries after this id: the next page, from the last id of the previous one. */
  after: decimal(0, Number.MAX_SAFE_INTEGER).optional(),
  limit: decimal(1, 1000).default(100),
});
export type AuditQuery = z.infer<typeof AuditQuery>;

export const AuditListing = z.object({ entries: z.array(AuditEntry), truncated: z.boolean() });
export type AuditListing = z.infer<typeof AuditListing>;
