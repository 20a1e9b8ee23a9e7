import { otlpSignals, type LogsRequest, type MetricsRequest, type OtlpSignal, type TracesRequest } from "../../protocol/otlp.ts";
import type { OutboxRecord } from "../outbox.ts";
import type { StreamPolicy } from "./shipper.ts";

/** Export requests merged into one per batch: their resource entries side by side. */
const mergers: { [S in OtlpSignal]: (bodies: readonly string[]) => unknown } = {
  metrics: (bodies): MetricsRequest => ({ resourceMetrics: bodies.flatMap((b) => (JSON.parse(b) as MetricsRequest).resourceMetrics) }),
  traces: (bodies): TracesRequest => ({ resourceSpans: bodies.flatMap((b) => (JSON.parse(b) as TracesRequest).resourceSpans) }),
  logs: (bodies): LogsRequest => ({ resourceLogs: bodies.flatMap((b) => (JSON.parse(b) as LogsRequest).resourceLogs) }),
};

/**
 * Operational telemetry: filtered OTLP export requests (one record each) to /v1/beacon/v1/{signal}, merged
 * into requests of at most `batchBytes`. Best-effort: delivered records are deleted, not kept.
 */
export function telemetryPolicy(signal: OtlpSignal, batchBytes: number): StreamPolicy {
  return {
    stream: signal,
    path: otlpSignals[signal].path,
    batchSize: 1_000,
    batchBytes,
    keepDelivered: false,
    buildPayload: (records: readonly OutboxRecord[]) => mergers[signal](records.map((r) => r.body)),
  };
}
