import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Clock } from "../../clock.ts";
import type { LicenseStatus } from "../../protocol/local-api.ts";
import { LicenseState } from "../../protocol/local-api.ts";
import type { OtlpSignal } from "../../protocol/otlp.ts";
import type { SentRequest } from "../egress/beacon-client.ts";
import type { Outbox, RecordState, Stream } from "../storage/outbox.ts";

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
  readonly #requests: Counter<"stream" | "outcome">;
  readonly #recordsSent: Counter<"stream">;
  readonly #sendDuration: Histogram<"stream">;

  /**
   * `now`: the clock the outbox stamps records with (the sidecar's injected clock). `offline`: nothing waits to be
   * sent; what the outbox holds is kept for export (state `kept_for_export`).
   */
  constructor(
    outbox: Outbox,
    streams: readonly Stream[],
    license: () => LicenseStatus | undefined,
    now: Clock = Date.now,
    offline = false,
  ) {
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
    this.#requests = new Counter({
      name: "egress_beacon_requests_total",
      help: "Requests sent to the beacon by stream (license = verification) and outcome: 2xx, 4xx, 5xx or unreachable",
      labelNames: ["stream", "outcome"],
      registers,
    });
    this.#recordsSent = new Counter({
      name: "egress_records_sent_total",
      help: "Records the beacon accepted (2xx), by stream",
      labelNames: ["stream"],
      registers,
    });
    this.#sendDuration = new Histogram({
      name: "egress_beacon_request_duration_seconds",
      help: "Time from sending a request to the beacon until its answer (or failure), by stream",
      labelNames: ["stream"],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.#stateGauges(outbox, streams, license, now, offline);
  }

  /** Gauges read at each scrape: the license's state and expiry, the outbox's records and its oldest pending age. */
  #stateGauges(outbox: Outbox, streams: readonly Stream[], license: () => LicenseStatus | undefined, now: Clock, offline: boolean): void {
    const registers = [this.registry];
    new Gauge({
      name: "egress_license_state",
      help: "1 for the license's current state (valid, grace, invalid, unverified), 0 for the others",
      labelNames: ["state"],
      registers,
      collect() {
        const current = license()?.state ?? "unverified"; // scraped on metrics.listen before the license part started
        for (const state of LicenseState.options) this.set({ state }, state === current ? 1 : 0);
      },
    });
    new Gauge({
      name: "egress_license_expiry_timestamp_seconds",
      help: "When the current license token (online) or offline license expires, Unix seconds; 0 when unknown",
      registers,
      collect() {
        const expiresAt = license()?.expiresAt;
        this.set(expiresAt ? Date.parse(expiresAt) / 1000 : 0);
      },
    });
    new Gauge({
      name: "egress_outbox_oldest_pending_age_seconds",
      help: "Age of the oldest record not yet delivered, by stream; 0 when none waits",
      labelNames: ["stream"],
      registers,
      collect() {
        for (const stream of streams) {
          const oldest = outbox.stats.counts(stream).oldestPendingAt;
          this.set({ stream }, oldest === null || offline ? 0 : Math.max(0, (now() - oldest) / 1000));
        }
      },
    });
    new Gauge({
      name: "egress_outbox_records",
      help: "Records in the outbox by stream and state",
      labelNames: ["stream", "state"],
      registers,
      collect() {
        for (const stream of streams) {
          const counts = outbox.stats.counts(stream);
          for (const state of ["pending", "sending", "completed", "failed"] as const satisfies RecordState[]) {
            this.set({ stream, state: offline && state === "pending" ? "kept_for_export" : state }, counts[state]);
          }
        }
      },
    });
  }

  /** The local API's load (src/http/server.ts): connections open, those closed at the cap, body bytes held. */
  httpServer(load: () => { open: number; refused: number; evicted: number; bodyBytesByBudget: Record<string, number> }): void {
    const registers = [this.registry];
    new Gauge({
      name: "egress_http_connections",
      help: "Connections open to the local API (http.maxConnections caps them)",
      registers,
      collect() {
        this.set(load().open);
      },
    });
    // Totals kept by the server; the counter follows them.
    const seen = { evicted: 0, refused: 0 };
    new Counter({
      name: "egress_http_connections_closed_total",
      help: "Connections closed at http.maxConnections: evicted (the oldest idle, for a new one) or refused (all busy)",
      labelNames: ["reason"],
      registers,
      collect() {
        const now = load();
        for (const reason of ["evicted", "refused"] as const) {
          this.inc({ reason }, now[reason] - seen[reason]);
          seen[reason] = now[reason];
        }
      },
    });
    new Gauge({
      name: "egress_http_body_bytes_in_flight",
      help: "Request body bytes (and items, at 64 bytes each) being read and parsed, by budget: billing (http.billingBodyBytesInFlight caps it) and shared (http.bodyBytesInFlight)",
      labelNames: ["budget"],
      registers,
      collect() {
        for (const [budget, held] of Object.entries(load().bodyBytesByBudget)) this.set({ budget }, held);
      },
    });
  }

  /** The data dir's volume, so an operator is warned before billing intake stops at the reserve (507). */
  dataDir(volume: () => { sizeBytes: number; freeBytes: number } | undefined): void {
    const registers = [this.registry];
    new Gauge({
      name: "egress_data_dir_size_bytes",
      help: "Size of the file system holding the data dir (the outbox)",
      registers,
      collect() {
        const now = volume();
        if (now) this.set(now.sizeBytes);
      },
    });
    new Gauge({
      name: "egress_data_dir_free_bytes",
      help: "Bytes the sidecar may still write on the data dir's file system; billing intake stops below 16 MiB",
      registers,
      collect() {
        const now = volume();
        if (now) this.set(now.freeBytes);
      },
    });
  }

  beaconRequest(sent: SentRequest): void {
    const outcome = sent.status === null ? "unreachable" : `${Math.floor(sent.status / 100)}xx`;
    this.#requests.inc({ stream: sent.stream, outcome });
    this.#sendDuration.observe({ stream: sent.stream }, sent.durationMs / 1000);
    if (sent.status !== null && sent.status >= 200 && sent.status < 300) this.#recordsSent.inc({ stream: sent.stream }, sent.records);
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
