import { Counter, Gauge, type Registry } from "prom-client";
import { asDatabaseUnavailable } from "../../database-unavailable.ts";
import type { OtlpSignal } from "../../protocol/otlp.ts";
import type { ForwardQueue } from "./queue.ts";

/**
 * The forwarder's series on the beacon's GET /metrics: aggregates only, no license or organization in any label
 * (the route is on the public listener). The backlog is the shared queue's, so on PostgreSQL every replica shows
 * the same backlog, and each its own counters.
 */
export class ForwardMetrics {
  readonly #forwarded: Counter<"signal">;
  readonly #dropped: Counter<"signal">;
  readonly #droppedDataPoints: Counter;
  readonly #requests: Counter<"signal" | "outcome">;
  readonly #backlogBatches: Gauge;
  readonly #backlogBytes: Gauge;
  readonly #backlogAge: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#forwarded = new Counter({
      name: "egress_beacon_forward_batches_total",
      help: "Stored OTLP batches the vendor's collector took (a 2xx that is not an HTML page), by signal",
      labelNames: ["signal"],
      registers,
    });
    this.#dropped = new Counter({
      name: "egress_beacon_forward_dropped_batches_total",
      help: "Stored OTLP batches the collector refused for good (400, 413, 422) and that were dropped, by signal",
      labelNames: ["signal"],
      registers,
    });
    this.#droppedDataPoints = new Counter({
      name: "egress_beacon_forward_filtered_data_points_total",
      help: "Data points of metrics not in telemetry.forward.metrics, left out of what is forwarded",
      registers,
    });
    this.#requests = new Counter({
      name: "egress_beacon_forward_requests_total",
      help: "Requests to the collector by signal and outcome: delivered, refused, html, unreachable, 3xx, 4xx or 5xx",
      labelNames: ["signal", "outcome"],
      registers,
    });
    this.#backlogBatches = new Gauge({
      name: "egress_beacon_forward_backlog_batches",
      help: "Stored OTLP batches waiting to be forwarded",
      registers,
    });
    this.#backlogBytes = new Gauge({
      name: "egress_beacon_forward_backlog_bytes",
      help: "Bytes (stored JSON) waiting to be forwarded",
      registers,
    });
    this.#backlogAge = new Gauge({
      name: "egress_beacon_forward_backlog_oldest_seconds",
      help: "Age of the oldest batch waiting to be forwarded (0 when none waits)",
      registers,
    });
  }

  request(signal: OtlpSignal, outcome: string): void {
    this.#requests.inc({ signal, outcome });
  }

  forwarded(signal: OtlpSignal, batches: number): void {
    this.#forwarded.inc({ signal }, batches);
  }

  dropped(signal: OtlpSignal, batches: number): void {
    this.#dropped.inc({ signal }, batches);
  }

  filtered(dataPoints: number): void {
    if (dataPoints > 0) this.#droppedDataPoints.inc(dataPoints);
  }

  /** Reads the backlog for a scrape; while the database is away the scrape is a 503, never a stale or zero backlog. */
  async refreshBacklog(queue: ForwardQueue, nowMs: number): Promise<void> {
    const backlog = await queue.backlog().catch((err) => {
      throw asDatabaseUnavailable(err);
    });
    this.#backlogBatches.set(backlog.batches);
    this.#backlogBytes.set(backlog.bytes);
    const oldest = backlog.oldestReceivedAt === null ? nowMs : Date.parse(backlog.oldestReceivedAt);
    this.#backlogAge.set(Math.max(0, (nowMs - oldest) / 1000));
  }
}
