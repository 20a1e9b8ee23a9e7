import Fastify, { LogController, type FastifyBaseLogger } from "fastify";
import type { Logger } from "pino";
import type { AgentConfig } from "../config/agent-config.ts";
import { installErrorHandling } from "../http/error-handling.ts";
import { listen } from "../http/listen.ts";
import { BeaconClient } from "./beacon-client.ts";
import { OnlineLicense } from "./license.ts";
import { OfflineLicense } from "./offline-license.ts";
import { Outbox } from "./outbox.ts";
import { billingPolicy } from "./shippers/billing.ts";
import { Shipper } from "./shippers/shipper.ts";
import { registerTransactionsSource } from "./sources/transactions.ts";
import { buildStatus } from "./status.ts";
import { StreamHealth } from "./stream-health.ts";
import { readVendorPublicKey } from "./vendor-key.ts";

const PRUNE_EVERY_MS = 60 * 60_000;
/** SIGTERM: an in-flight send gets this long to finish before it is cut (the whole stop stays under 10 s). */
const DRAIN_GRACE_MS = 5_000;

export interface RunningAgent {
  url: string;
  stop(): Promise<void>;
}

/**
 * Wires the sidecar: local API (sources) -> outbox -> shippers -> beacon. In offline mode no beacon client
 * and no shipper exist at all: records are kept locally for export.
 */
export async function startAgent(config: AgentConfig, options: { logger: Logger; now?: () => number }): Promise<RunningAgent> {
  const { logger } = options;
  const now = options.now ?? Date.now;
  // The data dir holds the license token cache and billing records: owner-only.
  process.umask(0o077);
  const outbox = new Outbox(config.dataDir, { now });
  const offline = config.offline.enabled;

  let client: BeaconClient | undefined;
  let license: OnlineLicense | OfflineLicense;
  const billingHealth = new StreamHealth(logger, "billing", now);
  let billing: Shipper | undefined;
  if (offline) {
    license = new OfflineLicense({ ...config.offline, now: () => new Date(now()) });
    const status = await license.start();
    logger.info({ licenseId: status.licenseId, state: status.state, expiresAt: status.expiresAt, reason: status.lastError }, "offline mode: no egress of any kind");
  } else {
    client = new BeaconClient({ baseUrl: config.beaconUrl, timeoutMs: config.retry.requestTimeout, now });
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
    billing = new Shipper({
      policy: billingPolicy(config.licenseKey, config.limits.batchTransactions),
      outbox,
      client,
      health: billingHealth,
      logger,
      token: () => online.token(),
      onUnauthorized: () => online.verifySoon(),
      flushMs: config.intervals.flush,
      minBackoffMs: config.retry.minBackoff,
      maxBackoffMs: config.retry.maxBackoff,
      now,
    });
    billing.start();
  }

  const prune = () => {
    const removed = outbox.pruneCompleted(now() - config.retention.completed);
    if (removed > 0) logger.info({ removed }, "pruned delivered records past retention");
  };
  prune();
  const pruneTimer = setInterval(prune, PRUNE_EVERY_MS);
  pruneTimer.unref();

  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: config.limits.bodyLimit,
    return503OnClosing: true,
    // The instance posts all day long: per-request lines would drown what matters. Errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
  });
  installErrorHandling(app);
  let closing = false;
  registerTransactionsSource(app, outbox, () => billing?.wake());
  app.get("/v1/status", async () =>
    buildStatus(license.status(), outbox, [{ stream: "billing", enabled: true, health: billing ? billingHealth : undefined }], now()),
  );
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (_request, reply) => (closing ? reply.code(503).send({ ready: false }) : { ready: true }));
  const url = await listen(app, config.listen);
  logger.info({ url, offline, dataDir: config.dataDir }, "sidecar listening");

  return {
    url,
    async stop() {
      closing = true;
      await app.close(); // stops accepting; in-flight local requests finish (their records are committed)
      await billing?.stop(DRAIN_GRACE_MS);
      await license.stop();
      clearInterval(pruneTimer);
      await client?.close();
      outbox.close();
      logger.info("sidecar stopped");
    },
  };
}
