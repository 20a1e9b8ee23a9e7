import type { Logger } from "pino";
import type { AgentConfig } from "../config/agent-config.ts";
import type { WarningLogTap } from "../log.ts";
import { OTLP_SIGNALS, type OtlpSignal } from "../protocol/otlp.ts";
import type { UsageMeasures } from "../protocol/usage-snapshot.ts";
import { HttpError } from "../errors.ts";
import { HttpServer } from "../http/server.ts";
import { BeaconClient } from "./beacon-client.ts";
import { OnlineLicense } from "./license.ts";
import { OfflineLicense } from "./offline-license.ts";
import { AgentMetrics } from "./metrics.ts";
import { AuditLog } from "./audit.ts";
import { registerOperatorRoutes } from "./operator-routes.ts";
import { STREAMS, type Outbox, type Stream } from "./outbox.ts";
import { openOutbox } from "./data-dir.ts";
import { ensureWritableDataDir, shareWithGroup } from "./data-dir-access.ts";
import { lockDataDir } from "./data-dir-lock.ts";
import { DataDirSpace } from "./disk-space.ts";
import { privacyPolicy } from "./privacy.ts";
import { announceHealth } from "../health-file.ts";
import { startPruning } from "./pruning.ts";
import type { SelfTelemetry } from "./self-telemetry.ts";
import { streamPolicies } from "./shippers/policies.ts";
import { Shipper } from "./shippers/shipper.ts";
import { registerOtlpReceiver } from "./sources/otlp.ts";
import { registerTransactionsSource } from "./sources/transactions.ts";
import { registerUsageMeasuresSource } from "./sources/usage-measures.ts";
import { FileMeasures, PostgresMeasures, PushedMeasures, type MeasuresSource } from "./usage/measures-source.ts";
import { UsageSnapshotter } from "./usage/snapshotter.ts";
import { buildStatus } from "./status.ts";
import { StreamHealth } from "./stream-health.ts";
import { readVendorPublicKey } from "./vendor-key.ts";

/** SIGTERM: an in-flight send gets this long to finish before it is cut (the whole stop stays under 10 s). */
const DRAIN_GRACE_MS = 5_000;
const SEVERITY = { warning: 13, error: 17 } as const;

/** The address the sidecar's own exporters reach its local API at: loopback even when it listens on all. */
function loopbackUrl(url: string): string {
  return url.replace("//0.0.0.0:", "//127.0.0.1:").replace("//[::]:", "//[::1]:");
}

function measuresSource(usage: AgentConfig["usage"]): MeasuresSource {
  if (usage.source === "file") return new FileMeasures(usage.file);
  const { url, statementTimeout, queries } = usage.postgres;
  return new PostgresMeasures({ url, statementTimeoutMs: statementTimeout, queries: queries as Record<keyof UsageMeasures, string> });
}

export interface RunningAgent {
  url: string;
  stop(): Promise<void>;
}

/**
 * Wires the sidecar: local API (sources) -> outbox -> shippers -> beacon. In offline mode no beacon client
 * and no shipper exist at all: records are kept locally for export.
 */
export async function startAgent(
  config: AgentConfig,
  options: {
    logger: Logger;
    now?: () => number;
    logTap?: WarningLogTap;
    /** `start --new-outbox`: replace a missing, foreign or damaged outbox with a new one (see data-dir.ts). */
    newOutbox?: boolean;
  },
): Promise<RunningAgent> {
  const { logger } = options;
  const now = options.now ?? Date.now;
  // Refuses (exit 3) a data dir another sidecar runs on, or whose outbox is missing, swapped or damaged.
  ensureWritableDataDir(config.dataDir);
  const lock = lockDataDir(config.dataDir, now);
  let outbox: Outbox;
  try {
    outbox = openOutbox(config.dataDir, { now, logger, newOutbox: options.newOutbox });
    shareWithGroup(config.dataDir);
  } catch (err) {
    lock.release();
    throw err;
  }
  const audit = new AuditLog(config.dataDir, { keepBodies: config.audit.keepBodies, secrets: [config.licenseKey], logger });
  const space = new DataDirSpace(config.dataDir, { logger });
  space.roomForTelemetry(); // logs at once when the sidecar starts on a (nearly) full data dir
  const offline = config.offline.enabled;

  // A switched-off signal's queued records are deleted, not sent (the switch may have changed since they came).
  for (const signal of OTLP_SIGNALS) {
    const removed = config.telemetry[signal] ? 0 : outbox.discard(signal);
    if (removed > 0) logger.info({ signal, removed }, "signal switched off: queued records deleted");
  }

  if (!config.usageReporting) {
    const removed = outbox.discard("usage");
    if (removed > 0) logger.info({ removed }, "usage reporting off: queued snapshots deleted");
  }
  const pushed = config.usageReporting && config.usage.source === "push" ? new PushedMeasures(outbox) : undefined;
  let snapshotter: UsageSnapshotter | undefined;

  let client: BeaconClient | undefined;
  let license: OnlineLicense | OfflineLicense;
  const streams: readonly Stream[] = STREAMS;
  const health = new Map(streams.map((stream) => [stream, new StreamHealth(logger, stream, now)]));
  const shippers = new Map<Stream, Shipper>();
  const metrics = new AgentMetrics(outbox, streams, () => license.status(), now, offline);
  if (offline) {
    license = new OfflineLicense({ ...config.offline, now: () => new Date(now()) });
    const status = await license.start();
    logger.info({ licenseId: status.licenseId, state: status.state, expiresAt: status.expiresAt, reason: status.lastError }, "offline mode: no egress of any kind");
  } else {
    const beacon = new BeaconClient({
      baseUrl: config.beaconUrl,
      timeoutMs: config.retry.requestTimeout,
      proxy: config.proxy,
      extraCa: config.extraCa,
      now,
    });
    beacon.listeners.push((sent) => audit.record(sent), (sent) => metrics.beaconRequest(sent));
    client = beacon;
    const vendorKey = config.offline.publicKeyFile ? readVendorPublicKey(config.offline.publicKeyFile) : undefined;
    const online = new OnlineLicense({
      client,
      licenseKey: config.licenseKey,
      outbox,
      intervalMs: config.intervals.licenseVerify,
      graceMs: config.license.gracePeriod,
      minBackoffMs: config.retry.minBackoff,
      maxBackoffMs: config.retry.maxBackoff,
      vendorKey,
      logger,
      now,
    });
    await online.start();
    license = online;
    for (const policy of streamPolicies(config)) {
      const shipper = new Shipper({
        policy,
        outbox,
        client: beacon,
        health: health.get(policy.stream)!,
        logger,
        token: () => online.token(),
        onUnauthorized: () => online.verifySoon(),
        flushMs: config.intervals.flush,
        concurrency: config.limits.sendConcurrency,
        minBackoffMs: config.retry.minBackoff,
        maxBackoffMs: config.retry.maxBackoff,
        now,
      });
      shipper.start();
      shippers.set(policy.stream, shipper);
    }
    if (config.usageReporting) {
      snapshotter = new UsageSnapshotter({
        outbox,
        source: pushed ?? measuresSource(config.usage),
        intervalMs: config.intervals.usageSnapshot,
        retryMs: config.retry.maxBackoff,
        logger,
        health: health.get("usage")!,
        onEnqueued: () => shippers.get("usage")?.wake(),
        now,
      });
      snapshotter.start();
    }
  }

  // The instance posts all day long: per-request log lines would drown what matters. Errors are still logged.
  const app = new HttpServer({ logger, bodyLimit: { bytes: config.limits.bodyLimit, key: "limits.bodyLimit" }, limits: config.http, limitsKey: "http" });
  metrics.httpServer(() => app.load);
  let closing = false;
  /** Set by stop() once the own telemetry's last export is in: new input gets 503 while the shippers drain. */
  let intakeClosed = false;
  app.onRequest = (method) => {
    if (intakeClosed && method === "POST") {
      throw new HttpError(503, "EGRESS_ERR_STOPPING", "the sidecar is stopping and stored nothing of this request; send it again when it is back");
    }
  };
  let selfTelemetry: SelfTelemetry | undefined;
  app.onResponse = (served) =>
    selfTelemetry?.observe({
      endpoint: served.route,
      method: served.method,
      serviceName: "egress-agent",
      status: served.status,
      startMs: served.startMs,
      durationMs: served.durationMs,
    });
  registerTransactionsSource(app, outbox, () => shippers.get("billing")?.wake(), space);
  registerUsageMeasuresSource(app, pushed, space);
  registerOtlpReceiver(app, {
    outbox,
    enabled: config.telemetry,
    privacy: privacyPolicy({
      extraAllow: config.privacy.allowAttributes,
      logMinSeverity: SEVERITY[config.privacy.logSeverity],
      slowSpanMs: config.privacy.slowSpan,
    }),
    cap: { streams: OTLP_SIGNALS, maxBytes: config.limits.telemetryMaxBytes },
    metrics,
    space,
    onEnqueued: (signal) => shippers.get(signal)?.wake(),
  });
  registerOperatorRoutes(app, {
    status: () =>
      buildStatus(
        license.status(),
        outbox,
        streams.map((stream) => ({
          stream,
          enabled: stream === "billing" || (stream === "usage" ? config.usageReporting : config.telemetry[stream as OtlpSignal]),
          health: shippers.has(stream) ? health.get(stream) : undefined,
        })),
        now(),
        offline,
      ),
    audit,
    metrics,
    ready: () => !closing,
  });
  const url = await app.listen(config.listen);
  lock.announce();
  logger.info({ url, offline, dataDir: config.dataDir, telemetry: config.telemetry }, "sidecar listening");
  announceHealth(url, "/healthz");
  const pruning = startPruning({ outbox, audit, keepCompletedMs: config.retention.completed, keepAuditMs: config.audit.retention, logger, now });
  // Loaded after the listener is up: the OpenTelemetry SDK takes a while to load and readiness must not wait.
  const selfTelemetryStarting =
    config.selfTelemetry.enabled && OTLP_SIGNALS.some((signal) => config.telemetry[signal])
      ? import("./self-telemetry.ts")
          .then(({ SelfTelemetry }) => {
            if (closing) return;
            selfTelemetry = new SelfTelemetry({
              localUrl: loopbackUrl(url),
              signals: config.telemetry,
              env: config.selfTelemetry.env,
              exportIntervalMs: config.selfTelemetry.exportInterval,
              slowMs: config.privacy.slowSpan,
              logTap: options.logTap,
            });
            client?.listeners.push((sent) =>
              selfTelemetry?.observe({ endpoint: sent.path, method: "POST", serviceName: "beacon", status: sent.status, startMs: sent.startMs, durationMs: sent.durationMs }),
            );
          })
          // Reporting about itself is optional; billing and the relay must not depend on it.
          .catch((err) => logger.warn({ err }, "own telemetry could not start; running without it"))
      : undefined;

  return {
    url,
    async stop() {
      closing = true;
      // Its last export goes to the local receiver, so this comes before the listener closes.
      await selfTelemetryStarting;
      await selfTelemetry?.stop();
      selfTelemetry = undefined;
      // The listener stays open through the drain, so /readyz and new input get a clear 503, not a refused connection.
      intakeClosed = true;
      await snapshotter?.stop();
      await Promise.all([...shippers.values()].map((shipper) => shipper.stop(DRAIN_GRACE_MS)));
      await app.close(); // in-flight local requests finish (their records are committed)
      await license.stop();
      pruning.stop();
      await client?.close();
      audit.close();
      outbox.close();
      lock.release();
      logger.info("sidecar stopped");
    },
  };
}
