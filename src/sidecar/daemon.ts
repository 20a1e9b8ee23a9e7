import type { Logger } from "pino";
import type { Clock, SetClockTimeout } from "../clock.ts";
import { Closers } from "../closers.ts";
import { announceHealth } from "../health-file.ts";
import type { WarningLogTap } from "../log.ts";
import type { AgentConfig } from "./config.ts";
import { AgentMetrics } from "./local-api/metrics.ts";
import { startOfflineEgress } from "./parts/egress-offline.ts";
import { startOnlineEgress } from "./parts/egress-online.ts";
import type { Egress } from "./parts/egress.ts";
import { LocalApi } from "./parts/local-api.ts";
import { startMetricsListener } from "./parts/metrics-listener.ts";
import { startOwnTelemetry } from "./parts/own-telemetry.ts";
import { openStorage } from "./parts/storage.ts";
import { STREAMS } from "./storage/outbox.ts";
import { startPruning } from "./storage/pruning.ts";
import { StreamHealth } from "./storage/stream-health.ts";
import { PushedMeasures } from "./usage/measures-source.ts";
import { settleHeapSoon } from "./settle-heap.ts";

export interface RunningAgent {
  url: string;
  close(): Promise<void>;
}

export interface AgentOptions {
  logger: Logger;
  now?: Clock;
  /**
   * setTimeout on `now`'s clock, for the schedules due at a time on it (the license's verifications, the usage
   * windows): a test with a faster clock passes one. The shippers' waits (flush, backoff) are durations on real timers.
   */
  setClockTimeout?: SetClockTimeout;
  logTap?: WarningLogTap;
  /** `start --new-outbox`: replace a missing, foreign or damaged outbox with a new one (see storage/data-dir.ts). */
  newOutbox?: boolean;
}

/**
 * Wires the sidecar: local API (sources) -> outbox -> shippers -> beacon. Each part registers its closer as it
 * starts; close() (or a failed start) closes them in reverse: own telemetry, pruning, intake, the shippers' drain
 * and the license, the listener, then the outbox and the data dir's lock, each even when one before it throws.
 */
export async function startAgent(config: AgentConfig, options: AgentOptions): Promise<RunningAgent> {
  const { logger } = options;
  const now = options.now ?? Date.now;
  const closers = new Closers();
  const url = await closers.starting(async () => {
    const storage = openStorage(config, { logger, now, newOutbox: options.newOutbox });
    closers.add(() => storage.close());
    const { outbox } = storage;
    let egress: Egress | undefined;
    const health = new Map(STREAMS.map((stream) => [stream, new StreamHealth(logger, stream, now)]));
    const metrics = new AgentMetrics(outbox, STREAMS, () => egress?.license.status(), now, config.offline.enabled);
    metrics.dataDir(() => storage.space.volume());
    const localApi = new LocalApi(config, logger, metrics);
    closers.add(() => localApi.close());
    if (config.metrics.listen) {
      // Closed after the drain (closers run in reverse): the last figures stay scrapeable while the shippers finish.
      const listener = await startMetricsListener(config.metrics.listen, { metrics, logger });
      closers.add(() => listener.close());
      logger.info({ url: listener.url }, "metrics listening");
    }
    const pushed = config.usageReporting && config.usage.source === "push" ? new PushedMeasures(outbox) : undefined;
    egress = config.offline.enabled
      ? await startOfflineEgress(config, { logger, now })
      : await startOnlineEgress(config, {
          outbox,
          audit: storage.audit,
          metrics,
          health,
          pushed,
          instanceId: storage.instanceId,
          logger,
          now,
          setClockTimeout: options.setClockTimeout,
        });
    closers.add(() => egress.close());
    const url = await localApi.serve(config, { storage, egress, metrics, health, pushed, now });
    closers.add(() => localApi.closeIntake());
    storage.announce();
    logger.info({ url, offline: config.offline.enabled, dataDir: config.dataDir, telemetry: config.telemetry }, "sidecar listening");
    announceHealth(url, "/healthz", logger);
    const pruning = startPruning({
      outbox: outbox.history,
      audit: storage.audit,
      keepCompletedMs: config.retention.completed,
      keepAuditMs: config.audit.retention,
      logger,
      now,
    });
    closers.add(() => pruning.close());
    const ownTelemetry = startOwnTelemetry(config, { url, localApi, egress, logger, logTap: options.logTap });
    closers.add(() => ownTelemetry.close());
    const settling = settleHeapSoon({ quiet: () => localApi.quietFor(1_000) });
    closers.add(() => settling.close());
    closers.add(() => localApi.stopping());
    return url;
  });
  return {
    url,
    close: () => closers.closeAll(),
  };
}
