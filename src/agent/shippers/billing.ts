import { beaconPaths } from "../../protocol/beacon-paths.ts";
import type { IngestTracesRequest, TraceTransaction } from "../../protocol/trace-transaction.ts";
import type { OutboxRecord } from "../outbox.ts";
import type { StreamPolicy } from "./shipper.ts";

/** Billing: trace transactions to /v1/beacon/ingest-traces, each carrying its failed-send count. */
export function billingPolicy(licenseKey: string, batchSize: number): StreamPolicy {
  return {
    stream: "billing",
    path: beaconPaths.ingestTraces,
    batchSize,
    keepDelivered: true,
    buildPayload(records: readonly OutboxRecord[]): IngestTracesRequest {
      return {
        license: licenseKey,
        trace_transactions: records.map((r) => ({ ...(JSON.parse(r.body) as TraceTransaction), num_failed_send_attempts: r.attempts })),
      };
    },
  };
}
