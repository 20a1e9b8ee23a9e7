import * as z from "zod";
import { TraceTransactionList } from "./trace-transaction.ts";

/** POST /v1/transactions on the sidecar: billing input from the instance. */
export const TransactionsRequest = z.object({
  trace_transactions: TraceTransactionList.min(1, { message: "must hold at least one transaction" }),
});
export type TransactionsRequest = z.infer<typeof TransactionsRequest>;

/** 202 answer: every transaction is on disk; `duplicates` of them were already there (ids seen before). */
export const TransactionsAccepted = z.object({ accepted: z.int(), duplicates: z.int() });
export type TransactionsAccepted = z.infer<typeof TransactionsAccepted>;

export const LicenseState = z.enum(["valid", "grace", "invalid", "unverified"]);
export type LicenseState = z.infer<typeof LicenseState>;

export const LicenseStatus = z.object({
  mode: z.enum(["online", "offline"]),
  state: LicenseState,
  licenseId: z.string().nullable(),
  organizationId: z.string().nullable(),
  /** When the current token (online: renewed before then) or the offline license expires. */
  expiresAt: z.string().nullable(),
  /** When the license itself expires, as the beacon's token says (online) or the offline license (offline). */
  licenseExpiresAt: z.string().nullable(),
  /** Last successful verification with the beacon (online only). */
  verifiedAt: z.string().nullable(),
  lastError: z.string().nullable(),
});
export type LicenseStatus = z.infer<typeof LicenseStatus>;

export const StreamStatus = z.object({
  enabled: z.boolean(),
  /** Waiting to be sent. Offline, billing records are not waiting: they are counted in keptForExport. */
  pending: z.int(),
  sending: z.int(),
  /** Delivered records still held (billing keeps them for retention.completed; telemetry deletes them). */
  completed: z.int(),
  /** Records delivered since the outbox was created, deleted or not. */
  delivered: z.int(),
  /** Offline mode: billing records held for `egress-agent export`, never sent. */
  keptForExport: z.int(),
  failed: z.int(),
  oldestPendingAgeSeconds: z.number().nullable(),
  lastSuccessAt: z.string().nullable(),
  lastError: z.object({ at: z.string(), message: z.string() }).nullable(),
  deadLetters: z.array(z.object({ recordId: z.string().nullable(), error: z.string().nullable(), attempts: z.int() })),
});
export type StreamStatus = z.infer<typeof StreamStatus>;

/** GET /v1/status. */
export const AgentStatus = z.object({
  license: LicenseStatus,
  streams: z.record(z.string(), StreamStatus),
});
export type AgentStatus = z.infer<typeof AgentStatus>;
