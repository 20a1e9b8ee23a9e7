import type { Logger } from "pino";
import type { Clock } from "../../clock.ts";
import { redactUrl } from "../../config/redact.ts";
import type { ForwardConfig } from "./config.ts";
import { Forwarder } from "./forwarder.ts";
import type { ForwardMetrics } from "./metrics.ts";
import type { ForwardQueue } from "./queue.ts";
import { OtlpHttpTransport } from "./transport.ts";

/** How long a stopping beacon lets a request in flight finish; after it the request is cut and its batches stay queued. */
const STOP_GRACE_MS = 5_000;

/**
 * Starts forwarding when telemetry.forward.endpoint is set (undefined otherwise); the returned closer stops it
 * before the store closes. Logs the endpoint (without credentials) and the metric names, never the headers.
 */
export function startForwarding(
  config: ForwardConfig,
  parts: {
    queue: ForwardQueue;
    metrics: ForwardMetrics;
    organizationOf: (licenseId: string) => string | undefined;
    logger: Logger;
    now: Clock;
  },
): { wake(): void; close(): Promise<void> } | undefined {
  if (!config.endpoint) return undefined;
  const logger = parts.logger.child({ component: "forward" });
  const forwarder = new Forwarder({
    queue: parts.queue,
    transport: new OtlpHttpTransport({
      endpoint: config.endpoint,
      headers: config.headers,
      timeoutMs: config.retry.requestTimeout,
      now: parts.now,
    }),
    allowedMetrics: config.metrics,
    organizationOf: parts.organizationOf,
    metrics: parts.metrics,
    logger,
    minBackoffMs: config.retry.minBackoff,
    maxBackoffMs: config.retry.maxBackoff,
  });
  forwarder.start();
  logger.info(
    { endpoint: redactUrl(config.endpoint), metrics: config.metrics, headers: Object.keys(config.headers) },
    "forwarding operational telemetry",
  );
  return { wake: () => forwarder.wake(), close: () => forwarder.stop(STOP_GRACE_MS) };
}
