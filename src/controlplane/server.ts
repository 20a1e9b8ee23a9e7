import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { Closers } from "../closers.ts";
import { ConfigError } from "../errors.ts";
import { HttpServer } from "../http/server.ts";
import { ApiKeys } from "../http/api-keys.ts";
import { registerAuthRoutes } from "./auth-setup.ts";
import type { ControlPlaneConfig } from "./config.ts";
import type { Deployer } from "./deployer.ts";
import { registerDeploymentRoutes } from "./deployment-routes.ts";
import { KubernetesDeployer } from "./kubernetes-deployer.ts";
import { resolveIsolation } from "./isolation.ts";
import { LocalDeployer } from "./local-deployer.ts";
import { RevisionPipeline } from "./revision-pipeline.ts";
import { DeploymentDatabases } from "./deployment-databases.ts";
import { SecretBox } from "./secret-box.ts";
import { DeploymentStore } from "./store.ts";
import { announceHealth } from "../health-file.ts";

const BODY_LIMIT = 1024 * 1024;

export interface ControlPlane {
  url: string;
  /** Stops taking requests and waits for revision work in flight; deployed agent servers keep running. */
  close(): Promise<void>;
}

/**
 * The deployment control plane: the v2 deployments API and the auth setup callback on one HTTP server, state in
 * dataDir/controlplane.db, and the revision pipeline driving a deployer. Agent servers it deployed outlive it: a
 * restart adopts those still serving and starts again those that are gone.
 */
export async function startControlPlane(
  config: ControlPlaneConfig,
  /** bwrap: the bubblewrap binary namespace isolation uses (default: the one on PATH). */
  options: { logger: Logger; deployer?: Deployer; now?: Clock; bwrap?: string },
): Promise<ControlPlane> {
  const { logger } = options;
  const now = options.now ?? Date.now;
  const apiKeys = new ApiKeys(config.apiKeys);
  if (apiKeys.size === 0)
    throw new ConfigError("apiKeys", ["apiKeys: at least one API key is required (in the config, or env PLATFORM_API_KEY)"]);
  // Checked before anything is written: a control plane that cannot isolate deployed code does not start.
  const isolation =
    config.deployer === "local" && !options.deployer ? resolveIsolation(config.agentServer, { logger, bwrap: options.bwrap }) : undefined;
  makeDataDir(config.dataDir);
  if (isolation && "uidBase" in isolation && isolation.uidBase !== undefined) refuseUnreachableDataDir(config.dataDir);
  const closers = new Closers();
  const url = await closers.starting(async () => {
    const db = openDatabase(config.dataDir);
    closers.add(() => db.close());
    const box = new SecretBox(config.dataDir);
    const store = new DeploymentStore(db, box, now, config.agentServer.tenantId);
    const deployer = options.deployer ?? makeDeployer(config, { isolation, box, logger });
    const pipeline = new RevisionPipeline(store, deployer, logger);
    // Before the database closes: revision work in flight (reconcile's included) writes its end.
    closers.add(() => pipeline.idleAll());
    const server = new HttpServer({ logger, bodyLimit: { bytes: BODY_LIMIT }, logRequests: true });
    server.get("/ok", () => ({ ok: true }), { reserved: true, quiet: true });
    registerDeploymentRoutes(server, { store, pipeline, deployer, apiKeys });
    registerAuthRoutes(server, { db, providers: config.auth.providers, stateTtlMs: config.auth.stateTtl, apiKeys, box, logger, now });
    closers.add(() => server.close());
    await pipeline.reconcile();
    return server.listen(config.listen);
  });
  logger.info({ url, deployer: config.deployer, apiKeys: apiKeys.size }, "control plane listening");
  announceHealth(url, "/ok", logger);
  return { url, close: () => closers.closeAll() };
}

/** controlplane.db in the data dir, owner-only whatever the umask. */
function openDatabase(dataDir: string): Database.Database {
  const dbPath = join(dataDir, "controlplane.db");
  // With a user per deployment, the data dir is traversable by every deployment's user. SQLite gives its -wal and
  // -shm files the database's mode.
  for (const path of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`]) if (existsSync(path)) chmodSync(path, 0o600);
  closeSync(openSync(dbPath, "a", 0o600));
  const db = new Database(dbPath);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.pragma("busy_timeout = 5000");
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** The deployer the config names: Kubernetes, or local processes (isolated as `isolation` says). */
function makeDeployer(
  config: ControlPlaneConfig,
  parts: { isolation: ReturnType<typeof resolveIsolation> | undefined; box: SecretBox; logger: Logger },
): Deployer {
  const { box, logger } = parts;
  if (config.deployer === "kubernetes") {
    return new KubernetesDeployer({
      ...config.kubernetes,
      agentServer: config.agentServer,
      databaseUriSecret: config.kubernetes.databaseUriSecret,
      logger: logger.child({ component: "kubernetes-deployer" }),
    });
  }
  return new LocalDeployer({
    dataDir: config.dataDir,
    agentServer: {
      ...config.agentServer,
      isolation: parts.isolation!,
      startTimeoutMs: config.agentServer.startTimeout,
      databases:
        config.agentServer.databaseUri === undefined
          ? undefined
          : new DeploymentDatabases(config.agentServer.databaseUri, (id) => box.derive(`deployment-database:${id}`), logger),
    },
    logger: logger.child({ component: "local-deployer" }),
  });
}

/**
 * The data dir, owner-only; the parents it lacks (`data/` of `./data/controlplane`) traversable but not listable
 * (0711), whatever the umask: a deployment's processes may run as a user of their own, who must reach its directory.
 */
function makeDataDir(dataDir: string): void {
  const missing: string[] = [];
  for (let dir = dirname(resolve(dataDir)); !existsSync(dir); dir = dirname(dir)) missing.unshift(dir);
  for (const dir of missing) {
    mkdirSync(dir, { mode: 0o711 });
    chmodSync(dir, 0o711);
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
}

/**
 * With a user per deployment, each must reach its directory in the data dir: every directory above it must be
 * searchable by others (`./data`, made owner-only by a beacon or sidecar started from the same directory, is not).
 * Refused at start, naming the directory, rather than every build failing on it.
 */
function refuseUnreachableDataDir(dataDir: string): void {
  for (let dir = dirname(resolve(dataDir)); ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) {
      throw new ConfigError("dataDir", [
        `dataDir: ${resolve(dataDir)} lies under ${dir}, which others cannot search: the deployments run as users of their own (agentServer.runAsUidBase) and must reach their directories in it. Give it the others' search bit (chmod o+x ${dir}), or choose a dataDir elsewhere`,
      ]);
    }
    if (dirname(dir) === dir) return;
  }
}
