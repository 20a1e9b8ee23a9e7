/**
 * The zod-free fast path for billing requests (POST /v1/transactions, POST /v1/beacon/ingest-traces): each function
 * returns exactly what its zod schema's `parse` outputs (same keys in the same order, unknown keys dropped, times
 * in canonical text, ids lower-cased), or undefined where zod would refuse. The schemas stay the record: a refused
 * body goes to zod, which finds the reasons (test/protocol/trace-transaction-fast.test.ts holds the two equal).
 * Per record, zod's object walk, the UUID regex and its issue-list plumbing cost more than the rest of intake.
 */
import { isRecord, MAX_INT32, MAX_LICENSE_KEY_LENGTH, MAX_TIMESTAMP_LENGTH } from "./common.ts";
import type { TransactionsRequest } from "./local-api.ts";
import { compareTimestamps, normaliseTimestamp } from "./timestamp.ts";
import { type IngestTracesRequest, MAX_LABEL_LENGTH, MAX_REQUEST_TRANSACTIONS, type TraceTransaction } from "./trace-transaction.ts";

const DASH = 45;
const NIL_UUID = "00000000-0000-0000-0000-000000000000";
const MAX_UUID = "ffffffff-ffff-ffff-ffff-ffffffffffff";

/** Per ASCII code: 1 for a digit or a-f, 2 for A-F, 0 for anything else. */
const HEX_KIND = new Uint8Array(128);
for (const c of "0123456789abcdef") HEX_KIND[c.charCodeAt(0)] = 1;
for (const c of "ABCDEF") HEX_KIND[c.charCodeAt(0)] = 2;

/** The kinds of hex digit (1 | 2) in text[from, to), or -1 when any character is not one. */
function hexRun(text: string, from: number, to: number): number {
  let kinds = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    const kind = c < 128 ? HEX_KIND[c]! : 0;
    if (kind === 0) return -1;
    kinds |= kind;
  }
  return kinds;
}

/**
 * CanonicalUuid: zod's UUID pattern (version 1-8 and variant 8-b, any case; or the nil and max UUIDs, lower-case
 * only), then lower-cased. A table lookup per group: twice as fast as the regex or a per-character switch.
 */
export function fastUuid(v: unknown): string | undefined {
  if (typeof v !== "string" || v.length !== 36) return undefined;
  if (v.charCodeAt(8) !== DASH || v.charCodeAt(13) !== DASH || v.charCodeAt(18) !== DASH || v.charCodeAt(23) !== DASH) return undefined;
  const kinds = hexRun(v, 0, 8) | hexRun(v, 9, 13) | hexRun(v, 14, 18) | hexRun(v, 19, 23) | hexRun(v, 24, 36);
  if (kinds < 0) return undefined;
  const version = v.charCodeAt(14);
  const variant = v.charCodeAt(19) | 0x20; // a hex digit here: | 0x20 lower-cases a letter, keeps a digit
  const versioned = version >= 49 && version <= 56 && (variant === 56 || variant === 57 || variant === 97 || variant === 98);
  if (!versioned && v !== NIL_UUID && v !== MAX_UUID) return undefined;
  return kinds & 2 ? v.toLowerCase() : v;
}

/** ColumnCount: a safe integer, 0 to MAX_INT32 (-0 kept, as zod keeps it). */
export function fastColumnCount(v: unknown): number | undefined {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0 && v <= MAX_INT32 ? v : undefined;
}

/**
 * Timestamp: at most MAX_TIMESTAMP_LENGTH characters as sent, then its canonical UTC text. zod counts code points,
 * but a time is ASCII: past MAX_TIMESTAMP_LENGTH units it is refused either way.
 */
export function fastTimestamp(v: unknown): string | undefined {
  if (typeof v !== "string" || v.length > MAX_TIMESTAMP_LENGTH) return undefined;
  const parsed = normaliseTimestamp(v);
  return parsed.ok ? parsed.value : undefined;
}

/**
 * StoredText(maxLength): 1 to maxLength code points (zod counts a surrogate pair once), no C0/C1 control character
 * (\p{Cc}), no lone surrogate.
 */
export function fastStoredText(v: unknown, maxLength: number): string | undefined {
  if (typeof v !== "string" || v.length < 1 || v.length > 2 * maxLength) return undefined;
  let pairs = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return undefined;
    if ((c & 0xf800) !== 0xd800) continue; // not a surrogate
    if ((c & 0xfc00) !== 0xd800 || (v.charCodeAt(i + 1) & 0xfc00) !== 0xdc00) return undefined; // a lone one
    pairs++;
    i++;
  }
  return v.length - pairs > maxLength ? undefined : v;
}

/** TraceTransaction, its time-order refinement included. */
export function fastTraceTransaction(raw: unknown): TraceTransaction | undefined {
  if (!isRecord(raw)) return undefined;
  const id = fastUuid(raw.id);
  const tenant_id = fastUuid(raw.tenant_id);
  const session_id = fastUuid(raw.session_id);
  const trace_count = fastColumnCount(raw.trace_count);
  if (id === undefined || tenant_id === undefined || session_id === undefined || trace_count === undefined) return undefined;
  const start_insertion_time = fastTimestamp(raw.start_insertion_time);
  const end_insertion_time = fastTimestamp(raw.end_insertion_time);
  const start_interval_time = fastTimestamp(raw.start_interval_time);
  const end_interval_time = fastTimestamp(raw.end_interval_time);
  if (
    start_insertion_time === undefined ||
    end_insertion_time === undefined ||
    start_interval_time === undefined ||
    end_interval_time === undefined ||
    compareTimestamps(end_insertion_time, start_insertion_time) < 0 ||
    compareTimestamps(end_interval_time, start_interval_time) < 0
  )
    return undefined;
  const status = fastStoredText(raw.status, MAX_LABEL_LENGTH);
  const num_failed_send_attempts = fastColumnCount(raw.num_failed_send_attempts);
  const transaction_type = fastStoredText(raw.transaction_type, MAX_LABEL_LENGTH);
  const organization_id = fastUuid(raw.organization_id);
  if (status === undefined || num_failed_send_attempts === undefined || transaction_type === undefined || organization_id === undefined)
    return undefined;
  return {
    id,
    tenant_id,
    session_id,
    trace_count,
    start_insertion_time,
    end_insertion_time,
    start_interval_time,
    end_interval_time,
    status,
    num_failed_send_attempts,
    transaction_type,
    organization_id,
  };
}

/** TraceTransactionList, with TransactionsRequest's lower bound when given. */
export function fastTraceTransactionList(raw: unknown, minLength = 0): TraceTransaction[] | undefined {
  if (!Array.isArray(raw) || raw.length < minLength || raw.length > MAX_REQUEST_TRANSACTIONS) return undefined;
  const list: TraceTransaction[] = [];
  for (let i = 0; i < raw.length; i++) {
    const transaction = fastTraceTransaction(raw[i]);
    if (transaction === undefined) return undefined;
    list.push(transaction);
  }
  return list;
}

/** POST /v1/transactions body (TransactionsRequest). */
export function fastTransactionsRequest(raw: unknown): TransactionsRequest | undefined {
  if (!isRecord(raw)) return undefined;
  const trace_transactions = fastTraceTransactionList(raw.trace_transactions, 1);
  return trace_transactions && { trace_transactions };
}

/** POST /v1/beacon/ingest-traces body (IngestTracesRequest). */
export function fastIngestTracesRequest(raw: unknown): IngestTracesRequest | undefined {
  if (!isRecord(raw)) return undefined;
  const license = fastStoredText(raw.license, MAX_LICENSE_KEY_LENGTH);
  if (license === undefined) return undefined;
  const trace_transactions = fastTraceTransactionList(raw.trace_transactions);
  return trace_transactions && { license, trace_transactions };
}
