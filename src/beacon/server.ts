import type { Logger } from "pino";
import { HttpServer } from "../http/server.ts";
import { readKeyedFile } from "../config/load.ts";
import { Authenticator } from "./authenticate.ts";
import type { BeaconConfig } from "./config.ts";
import { LicenseRegistry } from "./licenses.ts";
import { registerBeaconRoutes } from "./routes.ts";
import { openBeaconStorage } from "./storage.ts";
import { TokenIssuer } from "./token-issuer.ts";
import { announceHealth } from "../health-file.ts";

export interface RunningBeacon {
  /** Base URL the beacon listens on, e.g. http://127.0.0.1:8080 */
  url: string;
  close(): Promise<void>;
}

/** Opens the store and signing key, serves the beacon routes on `config.listen`. */
export async function startBeacon(config: BeaconConfig, options: { logger: Logger; now?: () => Date }): Promise<RunningBeacon> {
  const now = options.now ?? (() => new Date());
  const tokens = await TokenIssuer.open({
    dataDir: config.dataDir,
    signingKeyFile: config.signingKeyFile,
    ttlMs: config.tokenTtl,
    now,
  });
  const store = await openBeaconStorage(config, { logger: options.logger });
  const auth = new Authenticator(new LicenseRegistry(config.licenses), tokens, now);

  const https = config.tls.certFile
    ? { cert: readKeyedFile("tls.certFile", config.tls.certFile), key: readKeyedFile("tls.keyFile", config.tls.keyFile) }
    : null;
  const server = new HttpServer({
    logger: options.logger,
    bodyLimit: { bytes: config.bodyLimit, key: "bodyLimit" },
    limits: config.http,
    limitsKey: "http",
    tls: https ?? undefined,
    logRequests: true,
  });
  registerBeaconRoutes(server, { store, auth, tokens, now });
  const close = async () => {
    await server.close();
    await store.close();
  };

  let url: string;
  try {
    url = await server.listen(config.listen);
  } catch (err) {
    await close();
    throw err;
  }
  const database = config.database.url ? "postgresql" : "sqlite";
  if (config.database.url && !config.signingKeyFile) {
    // Replicas on one database but each with its own key: a token from one is refused by the others.
    options.logger.warn(
      { dataDir: config.dataDir },
      "database.url is set but signingKeyFile is not: this replica signs with a key of its own data dir; give every replica the same signingKeyFile",
    );
  }
  options.logger.info({ url, licenses: config.licenses.length, dataDir: config.dataDir, database }, "beacon listening");
  announceHealth(url, "/healthz", options.logger);
  return { url, close };
}
