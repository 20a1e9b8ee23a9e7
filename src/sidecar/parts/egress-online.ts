import type { Logger } from "pino";
import type { Clock, SetClockTimeout } from "../../clock.ts";
import type { UsageMeasures } from "../../protocol/usage-snapshot.ts";
import type { AuditLog } from "../audit.ts";
import { insecureBeaconHost } from "../beacon-url.ts";
import type { AgentConfig } from "../config.ts";
import { sendConcurrencyOf } from "../config-schema.ts";
import { BeaconClient } from "../egress/beacon-client.ts";
import { OnlineLicense } from "../license/online-license.ts";
import { readVendorPublicKey } from "../license/vendor-key.ts";
import type { AgentMetrics } from "../local-api/metrics.ts";
import { streamPolicies } from "../shippers/policies.ts";
import { Shipper } from "../shippers/shipper.ts";
import type { Outbox, Stream } from "../storage/outbox.ts";
import type { StreamHealth } from "../storage/stream-health.ts";
import { FileMeasures, PostgresMeasures, type MeasuresSource, type PushedMeasures } from "../usage/measures-source.ts";
import { UsageSnapshotter } from "../usage/snapshotter.ts";
import type { Egress } from "./egress.ts";

/** SIGTERM: an in-flight send gets this long to finish before it is cut (the whole stop stays under the 10 s deadline of src/sidecar/cli.ts). */
const DRAIN_GRACE_MS = 5_000;

export interface OnlineEgressOptions {
  outbox: Outbox;
  audit: AuditLog;
  metrics: AgentMetrics;
  health: ReadonlyMap<Stream, StreamHealth>;
  /** Usage measures the instance pushes, when `usage.source` is `push`. */
  pushed: PushedMeasures | undefined;
  /** Sent on every request (storage/instance-id.ts). */
  instanceId: string;
  logger: Logger;
  now: Clock;
  /** setTimeout on `now`'s clock, for the license's and the usage snapshots' schedules. */
  setClockTimeout?: SetClockTimeout | undefined;
}

/**
 * The only way out: the beacon client, the license verified through it (in the background: intake never waits for
 * the beacon), a shipper per stream (each starting once the license has a token or its first verify has answered)
 * and the usage snapshotter.
 */
export async function startOnlineEgress(config: AgentConfig, options: OnlineEgressOptions): Promise<Egress> {
  const { outbox, audit, metrics, logger, now } = options;
  const insecureHost = insecureBeaconHost(config.beaconUrl);
  if (insecureHost) {
    logger.warn(
      { beaconHost: insecureHost },
      "beaconUrl is plain http:// to a host that is not loopback (allowInsecureBeaconUrl): the license key crosses the network in clear",
    );
  }
  const client = new BeaconClient({
    baseUrl: config.beaconUrl,
    timeoutMs: config.retry.requestTimeout,
    proxy: config.proxy,
    extraCa: config.extraCa,
    now,
    instanceId: options.instanceId,
  });
  client.listeners.push(
    (sent) => audit.record(sent),
    (sent) => metrics.beaconRequest(sent),
  );
  const license = new OnlineLicense({
    client,
    licenseKey: config.licenseKey,
    outbox,
    intervalMs: config.intervals.licenseVerify,
    graceMs: config.license.gracePeriod,
    minBackoffMs: config.retry.minBackoff,
    maxBackoffMs: config.retry.maxBackoff,
    vendorKey: config.offline.publicKeyFile ? readVendorPublicKey(config.offline.publicKeyFile) : undefined,
    logger,
    now,
    setClockTimeout: options.setClockTimeout,
  });
  try {
    await license.start();
  } catch (err) {
    await client.close();
    throw err;
  }
  const shippers = startShippers(config, client, license, options);
  const snapshotter = config.usageReporting ? startSnapshotter(config, shippers, options) : undefined;
  return {
    license,
    client,
    shipping: (stream) => shippers.get(stream),
    async close() {
      try {
        await snapshotter?.stop();
        await Promise.all([...shippers.values()].map((shipper) => shipper.stop(DRAIN_GRACE_MS)));
      } finally {
        try {
          await license.stop();
        } finally {
          await client.close();
        }
      }
    },
  };
}

function startShippers(
  config: AgentConfig,
  client: BeaconClient,
  license: OnlineLicense,
  options: OnlineEgressOptions,
): Map<Stream, Shipper> {
  const shippers = new Map<Stream, Shipper>();
  for (const policy of streamPolicies(config)) {
    const shipper = new Shipper({
      policy,
      outbox: options.outbox,
      client,
      health: options.health.get(policy.stream)!,
      logger: options.logger,
      token: () => license.token(),
      onUnauthorized: () => license.verifySoon(),
      flushMs: config.intervals.flush,
      concurrency: sendConcurrencyOf(config.limits, policy.stream),
      minBackoffMs: config.retry.minBackoff,
      maxBackoffMs: config.retry.maxBackoff,
      now: options.now,
    });
    // Not before the license has a token, or has tried for one (a shipper stopped meanwhile does not start).
    void license.firstAttempt().then(() => shipper.start());
    shippers.set(policy.stream, shipper);
  }
  return shippers;
}

function startSnapshotter(config: AgentConfig, shippers: Map<Stream, Shipper>, options: OnlineEgressOptions): UsageSnapshotter {
  const snapshotter = new UsageSnapshotter({
    outbox: options.outbox,
    source: options.pushed ?? measuresSource(config.usage),
    intervalMs: config.intervals.usageSnapshot,
    retryMs: config.retry.maxBackoff,
    logger: options.logger,
    health: options.health.get("usage")!,
    onEnqueued: () => shippers.get("usage")?.wake(),
    now: options.now,
    setClockTimeout: options.setClockTimeout,
  });
  snapshotter.start();
  return snapshotter;
}

function measuresSource(usage: AgentConfig["usage"]): MeasuresSource {
  if (usage.source === "file") return new FileMeasures(usage.file);
  const { url, statementTimeout, queries } = usage.postgres;
  return new PostgresMeasures({ url, statementTimeoutMs: statementTimeout, queries: queries as Record<keyof UsageMeasures, string> });
}
