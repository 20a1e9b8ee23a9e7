import * as z from "zod";
import { CanonicalUuid, ColumnCount, Count, LicenseKey, StoredText, Timestamp } from "./common.ts";
import { compareTimestamps } from "./timestamp.ts";

/** Longest `status` and `transaction_type`: short words (`completed`, `traces`), with room to spare. */
export const MAX_LABEL_LENGTH = 128;

/**
 * One billing record: the trace transaction of docs/PROTOCOL.md ("Trace transaction"), field for field. Every field
 * is bounded to what both beacon engines store alike (docs/beacon.md): a record this schema passes is
 * never refused by the database, so it cannot fail a group commit. Its four times are parsed to canonical UTC text
 * (`Timestamp`): the sidecar stores and sends that, the beacon stores it.
 */
export const TraceTransaction = z
  .object({
    id: CanonicalUuid,
    tenant_id: CanonicalUuid,
    session_id: CanonicalUuid,
    trace_count: ColumnCount,
    start_insertion_time: Timestamp,
    end_insertion_time: Timestamp,
    start_interval_time: Timestamp,
    end_interval_time: Timestamp,
    status: StoredText(MAX_LABEL_LENGTH),
    num_failed_send_attempts: ColumnCount,
    transaction_type: StoredText(MAX_LABEL_LENGTH),
    organization_id: CanonicalUuid,
  })
  .superRefine((t, ctx) => {
    if (compareTimestamps(t.end_insertion_time, t.start_insertion_time) < 0) {
      ctx.addIssue({ code: "custom", path: ["end_insertion_time"], message: "must not be before start_insertion_time" });
    }
    if (compareTimestamps(t.end_interval_time, t.start_interval_time) < 0) {
      ctx.addIssue({ code: "custom", path: ["end_interval_time"], message: "must not be before start_interval_time" });
    }
  });
export type TraceTransaction = z.infer<typeof TraceTransaction>;

/**
 * Most trace transactions one request may carry (the sidecar sends at most `limits.batchTransactions`, itself at
 * most this). Checked before any element: a body of a million bad ones would cost an issue per field each.
 */
export const MAX_REQUEST_TRANSACTIONS = 10_000;

/** A list of trace transactions as a request carries it. */
export const TraceTransactionList = z
  .array(TraceTransaction)
  .max(MAX_REQUEST_TRANSACTIONS, { message: `must hold at most ${MAX_REQUEST_TRANSACTIONS} transactions` });

/** POST /v1/beacon/ingest-traces request. */
export const IngestTracesRequest = z.object({
  license: LicenseKey,
  trace_transactions: TraceTransactionList,
});
export type IngestTracesRequest = z.infer<typeof IngestTracesRequest>;

/** POST /v1/beacon/ingest-traces response: rows newly stored by this request. */
export const IngestTracesResponse = z.object({ inserted_count: Count });
export type IngestTracesResponse = z.infer<typeof IngestTracesResponse>;
