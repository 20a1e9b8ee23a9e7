import { Counter, Gauge, Registry } from "prom-client";
import type { OtlpSignal } from "../protocol/otlp.ts";
import type { Outbox, RecordState, Stream } from "./outbox.ts";

/** Why operational telemetry did not leave: each is a counter label an operator can alert on. */
export type TelemetryDropReason = "switched_off" | "policy" | "rejected" | "disk_full";

/**
 * The sidecar's Prometheus metrics (GET /metrics). A registry of its own, not prom-client's global one, so
 * that two sidecars in one process (tests, the demo) never share counters.
 */
export class AgentMetrics {
  readonly registry = new Registry();
  readonly #received: Counter<"signal">;
  readonly #dropped: Counter<"signal" | "reason">;
  readonly #droppedAttributes: Counter<"signal">;
  readonly #overflowRecords: Counter;
  readonly #overflowBytes: Counter;

  constructor(outbox: Outbox, streams: readonly Stream[]) {
    const registers = [this.registry];
    this.#received = new Counter({
      name: "egress_telemetry_received_items_total",
      help: "Operational telemetry items (data points, spans, log records) received from the instance",
      labelNames: ["signal"],
      registers,
    });
    this.#dropped = new Counter({
      name: "egress_telemetry_dropped_items_total",
      help: "Items that will never leave: signal switched off, filtered by the privacy policy, rejected as invalid, or disk full",
      labelNames: ["signal", "reason"],
      registers,
    });
    this.#droppedAttributes = new Counter({
      name: "egress_telemetry_dropped_attributes_total",
      help: "Attributes removed by the privacy allowlist",
      labelNames: ["signal"],
      registers,
    });
    this.#overflowRecords = new Counter({
      name: "egress_telemetry_overflow_dropped_records_total",
      help: "Queued telemetry export requests deleted, oldest first, to stay under limits.telemetryMaxBytes",
      registers,
    });
    this.#overflowBytes = new Counter({
      name: "egress_telemetry_overflow_dropped_bytes_total",
      help: "Bytes of queued telemetry deleted to stay under limits.telemetryMaxBytes",
      registers,
    });
    new Gauge({
      name: "egress_outbox_records",
      help: "Records in the outbox by stream and state",
      labelNames: ["stream", "state"],
      registers,
      collect() {
        for (const stream of streams) {
          const counts = outbox.counts(stream);
          for (const state of ["pending", "sending", "completed", "failed"] as const satisfies RecordState[]) {
            this.set({ stream, state }, counts[state]);
          }
        }
      },
    });
  }

  received(signal: OtlpSignal, items: number): void {
    if (items > 0) this.#received.inc({ signal }, items);
  }

  dropped(signal: OtlpSignal, reason: TelemetryDropReason, items: number): void {
    if (items > 0) this.#dropped.inc({ signal, reason }, items);
  }

  droppedAttributes(signal: OtlpSignal, count: number): void {
    if (count > 0) this.#droppedAttributes.inc({ signal }, count);
  }

  overflow(records: number, bytes: number): void {
    if (records > 0) {
      this.#overflowRecords.inc(records);
      this.#overflowBytes.inc(bytes);
    }
  }
}
