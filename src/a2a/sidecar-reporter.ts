import { ValueType, type Counter, type Gauge } from "@opentelemetry/api";
import { AggregationTemporalityPreference, OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { KiB, readCappedText } from "../http/capped-answer.ts";
import type { TraceTransaction } from "../protocol/trace-transaction.ts";
import { describeRemoteError, mediaType, parseAnswerText } from "../remote-answer.ts";
import type { RunCount, TaskStore } from "./task-store.ts";

export const AGENT_SERVER_SERVICE = "agent-server";

/**
 * The most of the sidecar's answer to POST /v1/transactions read: it is `{accepted}` or an error body (a 422 lists
 * at most 100 problems, ~20 KiB). (The OTLP metrics exporter caps its own reads, at 4 MiB.)
 */
export const SIDECAR_ANSWER_CAP = 64 * KiB;
const RETRYING = "reporting runs to the sidecar failed; retrying next interval";

export interface SidecarReporterOptions {
  /** The egress sidecar's local API, e.g. http://127.0.0.1:4318. */
  sidecarUrl: string;
  store: TaskStore;
  intervalMs: number;
  tenantId: string;
  organizationId: string;
  logger: Logger;
  now: Clock;
}

/** One A2A request as the agent server reports it to the sidecar. */
export interface A2aRequestObservation {
  /** The route template, `/a2a/{assistant_id}`: no assistant id leaves in a label. */
  endpoint: string;
  /** The JSON-RPC method: an A2A one, "unknown" for any other name, "invalid" when the request had none. */
  method: string;
  failed: boolean;
  durationMs: number;
}

export function toTransaction(count: RunCount, tenantId: string, organizationId: string): TraceTransaction {
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    id: count.transactionId,
    tenant_id: tenantId,
    session_id: count.sessionId,
    trace_count: count.runs,
    start_insertion_time: iso(count.firstAt),
    end_insertion_time: iso(count.lastAt),
    start_interval_time: iso(count.intervalStart),
    end_interval_time: iso(count.intervalEnd),
    status: "completed",
    num_failed_send_attempts: 0,
    transaction_type: "traces",
    organization_id: organizationId,
  };
}

/**
 * What the agent server tells its egress sidecar: every interval, the runs of each billing session as one trace
 * transaction (POST /v1/transactions, kept in the task store until the sidecar answers 202), and the A2A requests'
 * latency and failures as OTLP metrics (POST /v1/metrics) in the sidecar's own shapes.
 */
export class SidecarReporter {
  readonly #options: SidecarReporterOptions;
  readonly #provider: MeterProvider;
  readonly #latency: Gauge;
  readonly #failed: Counter;
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(options: SidecarReporterOptions) {
    this.#options = options;
    const exporter = new OTLPMetricExporter({
      url: `${options.sidecarUrl}/v1/metrics`,
      temporalityPreference: AggregationTemporalityPreference.CUMULATIVE,
    });
    const reader = new PeriodicExportingMetricReader({
      exporter,
      exportIntervalMillis: options.intervalMs,
      exportTimeoutMillis: Math.min(options.intervalMs, 10_000),
    });
    this.#provider = new MeterProvider({ resource: resourceFromAttributes({ "service.name": AGENT_SERVER_SERVICE }), readers: [reader] });
    const meter = this.#provider.getMeter(AGENT_SERVER_SERVICE);
    this.#latency = meter.createGauge("platform_http_requests_latency", { unit: "seconds", description: "request latency" });
    this.#failed = meter.createCounter("platform_http_requests_failed", {
      unit: "1",
      description: "counter of failed requests",
      valueType: ValueType.INT,
    });
  }

  start(): void {
    this.#timer = setInterval(() => void this.flush(), this.#options.intervalMs);
    this.#timer.unref();
  }

  observe(request: A2aRequestObservation): void {
    const attributes = { endpoint: request.endpoint, method: request.method, service_name: AGENT_SERVER_SERVICE };
    this.#latency.record(request.durationMs / 1000, attributes);
    if (request.failed) this.#failed.add(1, attributes);
  }

  /** Posts the closed intervals' transactions; one flush at a time, and a failed one is retried next interval. */
  flush(closeCurrent = false): Promise<void> {
    this.#flushing = this.#flushing.then(() => this.#post(closeCurrent));
    return this.#flushing;
  }

  async #post(closeCurrent: boolean): Promise<void> {
    const { store, sidecarUrl, tenantId, organizationId, logger, now } = this.#options;
    let counts: RunCount[];
    try {
      counts = await store.closedCounts(now(), closeCurrent);
    } catch (err) {
      // The store unreachable (a PostgreSQL outage): the counts wait in it for the next interval.
      logger.warn({ reason: (err as Error).message }, "reading the run counts failed; retrying next interval");
      return;
    }
    if (counts.length === 0) return;
    const body = JSON.stringify({ trace_transactions: counts.map((count) => toTransaction(count, tenantId, organizationId)) });
    try {
      const url = `${sidecarUrl}/v1/transactions`;
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        redirect: "manual",
        signal: AbortSignal.timeout(10_000),
      });
      // Read whole (within the cap) before the runs count as reported: a cut answer is a failed report, retried.
      const text = await readCappedText(response, SIDECAR_ANSWER_CAP, url);
      if (response.status !== 202) {
        const answer = { status: response.status, body: parseAnswerText(text), contentType: mediaType(response) };
        logger.warn({ reason: `the sidecar answered ${describeRemoteError(answer)}`, transactions: counts.length }, RETRYING);
        return;
      }
      await store.reported(counts.map((count) => count.transactionId));
      logger.info(
        { transactions: counts.length, runs: counts.reduce((sum, count) => sum + count.runs, 0) },
        "reported runs to the sidecar",
      );
    } catch (err) {
      const reason = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
      logger.warn({ reason, transactions: counts.length }, RETRYING);
    }
  }

  /**
   * Reports every run counted so far (the running interval closed early) and flushes the metrics; a reporter never
   * started (its server's start failed) only closes its metrics.
   */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    if (this.#timer) await this.flush(true);
    await this.#provider.shutdown().catch(() => undefined);
  }
}
