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
const STORED_ATTEMPTS = /"num_failed_send_attempts":\d+/;

/**
 * The failed-send count a record carries: its outbox count, saturated at the schema's bound (intake takes up to it,
 * and every failed send adds one), so a long-failing record is never refused for its count alone.
 */
export const sentAttempts = (record: OutboxRecord): number => Math.min(record.attempts, MAX_INT32);

/** A stored transaction (JSON text) with its current failed-send count, without a parse and re-serialise per record. */
function withAttempts(record: OutboxRecord): string {
  const attempts = sentAttempts(record);
  const body = bodyText(record);
  if (STORED_ATTEMPTS.test(body)) return body.replace(STORED_ATTEMPTS, `"num_failed_send_attempts":${attempts}`);
  return JSON.stringify({ ...(JSON.parse(body) as TraceTransaction), num_failed_send_attempts: attempts });
}

/** Billing: trace transactions to /v1/beacon/ingest-traces, each carrying its failed-send count. */
export function billingPolicy(licenseKey: string, batchSize: number): StreamPolicy {
  return {
    stream: "billing",
    path: beaconPaths.ingestTraces,
    batchSize,
    keepDelivered: true,
    answer: beaconAnswers.billing,
    buildPayload: (records: readonly OutboxRecord[]) =>
      `{"license":${JSON.stringify(licenseKey)},"trace_transactions":[${records.map(withAttempts).join(",")}]}`,
  };
}
