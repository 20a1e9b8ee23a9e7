import {
  SeverityNumber,
  SpanKind,
  SpanStatusCode,
  ValueType,
  type Counter,
  type Gauge,
  type Logger,
  type Tracer,
} from "@opentelemetry/api";
import { OTLPLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { AggregationTemporalityPreference, OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchLogRecordProcessor, LoggerProvider } from "@opentelemetry/sdk-logs";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import type { TappedLogEntry, WarningLogTap } from "../log.ts";
import type { OtlpSignal } from "../protocol/otlp.ts";

const SERVICE_NAME = "egress-agent";
/** A stopping sidecar gives its own telemetry this long to flush (the whole stop stays under 10 s). */
const FLUSH_TIMEOUT_MS = 2_000;

/** One HTTP request the sidecar served or sent, as its own telemetry reports it. */
export interface RequestObservation {
  /** Route template (`/v1/transactions`) or beacon path; never a raw URL. */
  endpoint: string;
  method: string;
  /** Who served the request: the sidecar itself, or the beacon for requests it sent. */
  serviceName: string;
  /** HTTP status, or null when no answer came. */
  status: number | null;
  startMs: number;
  durationMs: number;
}

export interface SelfTelemetryOptions {
  /** The sidecar's own local API (loopback): the exporters send there, so one receiver filters all telemetry. */
  localUrl: string;
  signals: Record<OtlpSignal, boolean>;
  env: string;
  exportIntervalMs: number;
  /** Requests at least this slow (or failed) become spans. */
  slowMs: number;
  logTap?: WarningLogTap;
}

const severities: [number, SeverityNumber, string][] = [
  [60, SeverityNumber.FATAL, "FATAL"],
  [50, SeverityNumber.ERROR, "ERROR"],
  [40, SeverityNumber.WARN, "WARN"],
];

/**
 * The sidecar's telemetry about itself, in the platform's shapes (docs/PROTOCOL.md, "What operational telemetry
 * carries"): request latency (gauge, seconds) and failed requests (cumulative monotonic sum), spans of failed or
 * slow requests, and its warning and error logs.
 * OpenTelemetry's SDK providers (one per switched-on signal, not the global API, nothing read from OTEL_* env)
 * export it as OTLP JSON to the sidecar's own receiver, through the same switches and privacy filter as the
 * instance's telemetry. The OTel exporters build their own HTTP agent and ignore HTTPS_PROXY, so they only
 * ever talk to loopback.
 */
export class SelfTelemetry {
  readonly #providers: { shutdown(): Promise<void> }[] = [];
  readonly #latency: Gauge | undefined;
  readonly #failed: Counter | undefined;
  readonly #tracer: Tracer | undefined;
  readonly #logger: Logger | undefined;
  readonly #slowMs: number;
  readonly #logTap: WarningLogTap | undefined;

  constructor(options: SelfTelemetryOptions) {
    const { localUrl, signals } = options;
    this.#slowMs = options.slowMs;
    const resource = resourceFromAttributes({ "service.name": SERVICE_NAME, "resource.name": SERVICE_NAME, env: options.env });
    if (signals.metrics) {
      const exporter = new OTLPMetricExporter({
        url: `${localUrl}/v1/metrics`,
        temporalityPreference: AggregationTemporalityPreference.CUMULATIVE,
      });
      const reader = new PeriodicExportingMetricReader({
        exporter,
        exportIntervalMillis: options.exportIntervalMs,
        exportTimeoutMillis: Math.min(options.exportIntervalMs, 10_000),
      });
      const meter = this.#provide(new MeterProvider({ resource, readers: [reader] })).getMeter(SERVICE_NAME);
      this.#latency = meter.createGauge("platform_http_requests_latency", { unit: "seconds", description: "request latency" });
      this.#failed = meter.createCounter("platform_http_requests_failed", {
        unit: "1",
        description: "counter of failed requests",
        valueType: ValueType.INT, // the platform's failed-requests sum carries asInt
      });
    }
    if (signals.traces) {
      const processor = new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: `${localUrl}/v1/traces` }),
        scheduledDelayMillis: options.exportIntervalMs,
      });
      this.#tracer = this.#provide(new TracerProvider({ resource, spanProcessors: [processor] })).getTracer(SERVICE_NAME);
    }
    if (signals.logs && options.logTap) {
      const processor = new BatchLogRecordProcessor({
        exporter: new OTLPLogExporter({ url: `${localUrl}/v1/logs` }),
        scheduledDelayMillis: options.exportIntervalMs,
      });
      this.#logger = this.#provide(new LoggerProvider({ resource, processors: [processor] })).getLogger(SERVICE_NAME);
      this.#logTap = options.logTap;
      this.#logTap.listen((entry) => this.#emitLog(entry));
    }
  }

  #provide<P extends { shutdown(): Promise<void> }>(provider: P): P {
    this.#providers.push(provider);
    return provider;
  }

  observe(request: RequestObservation): void {
    const attributes = { endpoint: request.endpoint, method: request.method, service_name: request.serviceName };
    const failed = request.status === null || request.status >= 400;
    this.#latency?.record(request.durationMs / 1000, attributes);
    if (failed) this.#failed?.add(1, attributes);
    if (this.#tracer && (failed || request.durationMs >= this.#slowMs)) {
      const span = this.#tracer.startSpan(`${request.method} ${request.endpoint}`, {
        kind: request.serviceName === SERVICE_NAME ? SpanKind.SERVER : SpanKind.CLIENT,
        startTime: request.startMs,
        attributes,
      });
      if (failed)
        span.setStatus({ code: SpanStatusCode.ERROR, message: request.status === null ? "no response" : `HTTP ${request.status}` });
      span.end(request.startMs + request.durationMs);
    }
  }

  #emitLog({ level, fields, message }: TappedLogEntry): void {
    const [, severityNumber, severityText] = severities.find(([min]) => level >= min)!;
    const err = fields.err as { code?: unknown; name?: unknown } | undefined;
    const errorType = err?.code ?? fields.code ?? err?.name;
    // Picked fields only: the tapped object is unredacted. The receiver scrubs the body like any other log.
    const reason = typeof fields.reason === "string" ? `: ${fields.reason}` : "";
    this.#logger!.emit({
      severityNumber,
      severityText,
      body: `${message}${reason}`,
      attributes: {
        component: String(fields.stream ?? fields.component ?? fields.signal ?? "sidecar"),
        ...(typeof errorType === "string" ? { error_type: errorType } : {}),
      },
    });
  }

  /** Flushes what is buffered to the local receiver (which must still be listening) and stops. */
  async stop(): Promise<void> {
    this.#logTap?.listen(undefined);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.#providers.map((provider) => provider.shutdown().catch(() => undefined))),
      new Promise((resolve) => (timer = setTimeout(resolve, FLUSH_TIMEOUT_MS))),
    ]);
    clearTimeout(timer);
  }
}
