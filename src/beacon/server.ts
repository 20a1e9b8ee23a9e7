import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { Closers } from "../closers.ts";
import { HttpServer } from "../http/server.ts";
import { readKeyedFile } from "../config/load.ts";
import { Authenticator } from "./authenticate.ts";
import type { BeaconConfig } from "./config.ts";
import { registerBeaconRoutes, registerMetricsRoute } from "./routes.ts";
import { startAdminListener } from "./admin/server.ts";
import { registerInstanceRoutes } from "./admin/instances-routes.ts";
import { describeInstances } from "./instances.ts";
import { LicenseCache } from "./license-cache.ts";
import { type BeaconStorage, openBeaconStorage } from "./storage.ts";
import { TokenIssuer } from "./token-issuer.ts";
import { announceHealth } from "../health-file.ts";
import { Counter, Registry } from "prom-client";
import { ForwardMetrics } from "./forward/metrics.ts";
import { startForwarding } from "./forward/start.ts";

export interface RunningBeacon {
  /** Base URL the beacon listens on, e.g. http://127.0.0.1:8080 */
  url: string;
  /** Base URL of the admin listener, when it is open. */
  adminUrl: string | undefined;
  close(): Promise<void>;
}

/**
 * Opens the signing key and the store, puts beacon.yaml's licenses in the database, serves the beacon routes on
 * `config.listen` and the admin API on `config.admin.listen` (src/beacon/admin/). Each part registers its closer
 * as it starts: a start that fails at any step (a bad key or TLS file, the database unreachable, the port taken)
 * closes what it had opened, and close() closes the server then the store, the store even when the server throws.
 */
export async function startBeacon(config: BeaconConfig, options: { logger: Logger; now?: Clock }): Promise<RunningBeacon> {
  const now = options.now ?? Date.now;
  const { logger } = options;
  const closers = new Closers();
  const { url, adminUrl } = await closers.starting(async () => {
    const tokens = await TokenIssuer.open({
      dataDir: config.dataDir,
      signingKeyFile: config.signingKeyFile,
      ttlMs: config.tokenTtl,
      now,
    });
    const store = await openBeaconStorage(config, { logger });
    closers.add(() => store.close());
    // beacon.yaml's licenses into the database, then the database's in force (and kept current) here.
    await store.licenses.applyConfig(config.licenses, new Date(now()));
    const licenses = await LicenseCache.open(store.licenses, { logger });
    closers.add(() => licenses.close());
    const auth = new Authenticator(licenses, tokens, now);
    // Telemetry onward to the vendor's collector; stopped (closers run in reverse) before the store closes.
    const registry = new Registry();
    const forwardMetrics = new ForwardMetrics(registry);
    const forwarder = startForwarding(config.telemetry.forward, {
      queue: store.forwardQueue,
      metrics: forwardMetrics,
      organizationOf: (id) => licenses.findById(id)?.organizationId,
      logger,
      now,
    });
    if (forwarder) closers.add(() => forwarder.close());
    const https = config.tls.certFile
      ? { cert: readKeyedFile("tls.certFile", config.tls.certFile), key: readKeyedFile("tls.keyFile", config.tls.keyFile) }
      : null;
    const server = new HttpServer({
      logger,
      bodyLimit: { bytes: config.bodyLimit, key: "bodyLimit" },
      limits: config.http,
      limitsKey: "http",
      tls: https ?? undefined,
      logRequests: true,
    });
    const refusedInstances = new Counter({
      name: "egress_beacon_instances_refused_total",
      help: "New sidecar instance ids not recorded because their license was past its hourly cap of new instances",
      registers: [registry],
    });
    registerBeaconRoutes(server, {
      store,
      auth,
      tokens,
      now,
      forwarder,
      onVerified: (id) => licenses.noteVerified(id, new Date(now())),
      onInstanceRefused: () => refusedInstances.inc(),
    });
    registerMetricsRoute(server, { registry, forwardMetrics, queue: store.forwardQueue, now });
    closers.add(() => server.close());
    const url = await server.listen(config.listen);
    const adminUrl = await openAdminListener(config, { store, licenses, now, logger, closers });
    return { url, adminUrl };
  });
  const database = config.database.url ? "postgresql" : "sqlite";
  if (config.database.url && !config.signingKeyFile) {
    // Replicas on one database but each with its own key: a token from one is refused by the others.
    logger.warn(
      { dataDir: config.dataDir },
      "database.url is set but signingKeyFile is not: this replica signs with a key of its own data dir; give every replica the same signingKeyFile",
    );
  }
  logger.info({ url, adminUrl, licenses: config.licenses.length, dataDir: config.dataDir, database }, "beacon listening");
  announceHealth(url, "/healthz", logger);
  return { url, adminUrl, close: () => closers.closeAll() };
}

/** The admin listener (src/beacon/admin/) with the instances the sidecars reported plugged in. */
function openAdminListener(
  config: BeaconConfig,
  parts: { store: BeaconStorage; licenses: LicenseCache; now: Clock; logger: Logger; closers: Closers },
): Promise<string | undefined> {
  const { store, now } = parts;
  const silentAfterMs = config.admin.silentAfter;
  const instances = {
    countsByLicense: async () =>
      new Map([...(await store.instances.instanceCounts(new Date(now() - silentAfterMs)))].map(([id, count]) => [id, count.total])),
    forLicense: async (licenseId: string) =>
      // The most recently seen DEFAULT_INSTANCES_LIMIT; GET /v1/admin/instances?license= pages through them all.
      (await describeInstances(store.instances, { licenseId, now: now(), silentAfterMs })).instances as unknown as Record<
        string,
        unknown
      >[],
  };
  return startAdminListener(
    { config, store, licenses: parts.licenses, now, instances },
    {
      logger: parts.logger,
      closers: parts.closers,
      register: (admin, deps) =>
        registerInstanceRoutes(admin, { store: store.instances, now, silentAfterMs, authorize: deps.auth.authorize }),
    },
  );
}
