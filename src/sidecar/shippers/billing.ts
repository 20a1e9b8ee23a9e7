import { beaconPaths } from "../../protocol/beacon-paths.ts";
import { MAX_INT32 } from "../../protocol/common.ts";
import type { TraceTransaction } from "../../protocol/trace-transaction.ts";
import { beaconAnswers } from "../egress/answer-rules.ts";
import { bodyText, type OutboxRecord } from "../storage/outbox.ts";
import type { StreamPolicy } from "./shipper.ts";

/**
 * The count as intake stored it. A JSON string cannot hold `"name":` unescaped, so the only match is the key
 * itself (TraceTransaction has no nested objects).
 */
const ATTEMPTS_KEY = Buffer.from('"num_failed_send_attempts":');
const [ZERO, NINE] = [48, 57];

/**
 * The failed-send count a record carries: its outbox count, saturated at the schema's bound (intake takes up to it,
 * and every failed send adds one), so a long-failing record is never refused for its count alone.
 */
export const sentAttempts = (record: OutboxRecord): number => Math.min(record.attempts, MAX_INT32);

/**
 * A stored transaction (JSON bytes) with its current failed-send count, without a parse and re-serialise per record:
 * the stored bytes themselves when the count they hold is current (most records), else with the count's digits
 * replaced.
 */
function withAttempts(record: OutboxRecord): Buffer {
  const body = typeof record.body === "string" ? Buffer.from(record.body) : record.body;
  const attempts = sentAttempts(record);
  const from = body.indexOf(ATTEMPTS_KEY) + ATTEMPTS_KEY.length;
  let to = from;
  let stored = 0;
  for (; to < body.length && body[to]! >= ZERO && body[to]! <= NINE; to++) stored = stored * 10 + body[to]! - ZERO;
  if (from < ATTEMPTS_KEY.length || to === from) {
    return Buffer.from(JSON.stringify({ ...(JSON.parse(bodyText(record)) as TraceTransaction), num_failed_send_attempts: attempts }));
  }
  // Read as a number, not copied into a string per record: intake stores the count as JSON writes it (no leading 0).
  if (stored === attempts && (body[from] !== ZERO || to - from === 1)) return body;
  return Buffer.concat([body.subarray(0, from), Buffer.from(String(attempts)), body.subarray(to)]);
}

const COMMA = Buffer.from(",");
const CLOSE = Buffer.from("]}");

/** Billing: trace transactions to /v1/beacon/ingest-traces, each carrying its failed-send count. */
export function billingPolicy(licenseKey: string, batchSize: number): StreamPolicy {
  return {
    stream: "billing",
    path: beaconPaths.ingestTraces,
    batchSize,
    keepDelivered: true,
    answer: beaconAnswers.billing,
    // Bytes end to end: the stored bodies are copied once into the request, never decoded into strings.
    buildPayload: (records: readonly OutboxRecord[]) => {
      const parts: Buffer[] = [Buffer.from(`{"license":${JSON.stringify(licenseKey)},"trace_transactions":[`)];
      for (const [i, record] of records.entries()) {
        if (i > 0) parts.push(COMMA);
        parts.push(withAttempts(record));
      }
      parts.push(CLOSE);
      return Buffer.concat(parts);
    },
  };
}
