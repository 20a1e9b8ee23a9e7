import { otlpSignals, type OtlpSignal } from "../../protocol/otlp.ts";
import type { OutboxRecord } from "../outbox.ts";
import type { StreamPolicy } from "./shipper.ts";

/**
 * Operational telemetry: filtered OTLP export requests (one record each) to /v1/beacon/v1/{signal}, merged
 * into requests of at most `batchBytes` (their resource entries side by side). Best-effort: delivered
 * records are deleted, not kept.
 */
export function telemetryPolicy(signal: OtlpSignal, batchBytes: number): StreamPolicy {
  const { path, fields } = otlpSignals[signal];
  return {
    stream: signal,
    path,
    batchSize: 1_000,
    batchBytes,
    keepDelivered: false,
    buildPayload: (records: readonly OutboxRecord[]) => ({
      [fields.resources]: records.flatMap((r) => (JSON.parse(r.body) as Record<string, unknown[]>)[fields.resources]!),
    }),
  };
}
