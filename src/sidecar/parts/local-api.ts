import type { Logger } from "pino";
import type { Clock } from "../../clock.ts";
import { HttpError } from "../../errors.ts";
import { HttpServer } from "../../http/server.ts";
import { OTLP_SIGNALS, type OtlpSignal } from "../../protocol/otlp.ts";
import type { AgentConfig } from "../config.ts";
import type { AgentMetrics } from "../local-api/metrics.ts";
import { registerOperatorRoutes } from "../local-api/operator-routes.ts";
import { buildStatus } from "../local-api/status.ts";
import { privacyPolicy } from "../privacy/policy.ts";
import { registerOtlpReceiver } from "../sources/otlp.ts";
import { registerTransactionsSource } from "../sources/transactions.ts";
import { registerUsageMeasuresSource } from "../sources/usage-measures.ts";
import { STREAMS, type Stream } from "../storage/outbox.ts";
import type { StreamHealth } from "../storage/stream-health.ts";
import type { PushedMeasures } from "../usage/measures-source.ts";
import type { Egress } from "./egress.ts";
import type { Storage } from "./storage.ts";

const SEVERITY = { warning: 13, error: 17 } as const;

/**
 * The sidecar's HTTP side: the sources the instance posts to and the routes an operator reads. Made before the
 * egress starts, so that closing it (last of the running parts) lets in-flight local requests commit their records.
 */
export class LocalApi {
  readonly app: HttpServer;
  /** Set once the own telemetry's last export is in: new input gets 503 while the shippers drain. */
  #intakeClosed = false;
  #stopping = false;
  /** performance.now() of the last request's arrival (the heap settles only once none has come for a while). */
  #lastRequestAt = Number.NEGATIVE_INFINITY;

  constructor(config: AgentConfig, logger: Logger, metrics: AgentMetrics) {
    // The instance posts all day long: per-request log lines would drown what matters. Errors are still logged.
    this.app = new HttpServer({
      logger,
      bodyLimit: { bytes: config.limits.bodyLimit, key: "limits.bodyLimit" },
      limits: config.http,
      limitsKey: "http",
    });
    metrics.httpServer(() => this.app.load);
    this.app.onRequest = (method) => {
      this.#lastRequestAt = performance.now();
      if (this.#intakeClosed && method === "POST") {
        throw new HttpError(
          "EGRESS_ERR_STOPPING",
          "the sidecar is stopping and stored nothing of this request; send it again when it is back",
        );
      }
    };
  }

  /** True when no request has arrived for `ms`. */
  quietFor(ms: number): boolean {
    return performance.now() - this.#lastRequestAt >= ms;
  }

  /** /readyz answers 503 from here on. */
  stopping(): void {
    this.#stopping = true;
  }

  /** The listener stays open through the drain, so new input gets a clear 503, not a refused connection. */
  closeIntake(): void {
    this.#intakeClosed = true;
  }

  /** Registers every route and listens; resolves with the URL it serves on. */
  serve(
    config: AgentConfig,
    parts: {
      storage: Storage;
      egress: Egress;
      metrics: AgentMetrics;
      health: ReadonlyMap<Stream, StreamHealth>;
      pushed: PushedMeasures | undefined;
      now: Clock;
    },
  ): Promise<string> {
    const { storage, egress, metrics, health } = parts;
    const { outbox, space } = storage;
    registerTransactionsSource(this.app, storage.billing, () => egress.shipping("billing")?.wake(), space);
    registerUsageMeasuresSource(this.app, parts.pushed, space);
    registerOtlpReceiver(this.app, {
      outbox,
      enabled: config.telemetry,
      privacy: privacyPolicy({
        extraAllow: config.privacy.allowAttributes,
        logMinSeverity: SEVERITY[config.privacy.logSeverity],
        slowSpanMs: config.privacy.slowSpan,
        vocabulary: config.privacy.vocabulary,
      }),
      cap: { streams: OTLP_SIGNALS, maxBytes: config.limits.telemetryMaxBytes },
      metrics,
      space,
      onEnqueued: (signal) => egress.shipping(signal)?.wake(),
    });
    const enabled = (stream: Stream) =>
      stream === "billing" || (stream === "usage" ? config.usageReporting : config.telemetry[stream as OtlpSignal]);
    registerOperatorRoutes(this.app, {
      status: () =>
        buildStatus(
          egress.license.status(),
          outbox,
          STREAMS.map((stream) => ({ stream, enabled: enabled(stream), health: egress.shipping(stream) ? health.get(stream) : undefined })),
          parts.now(),
          [config.licenseKey],
          config.offline.enabled,
        ),
      audit: storage.audit,
      metrics,
      ready: () => !this.#stopping,
    });
    return this.app.listen(config.listen);
  }

  close(): Promise<void> {
    return this.app.close(); // in-flight local requests finish (their records are committed)
  }
}
