import pg from "pg";
import type { Logger } from "pino";

// The one way the services make PostgreSQL connections (the beacon's store, the agent server's tasks, checkpoints
// and LISTEN client, the control plane's admin connection). node-postgres emits 'error' on a client whose
// connection the server ends (a restart, a failover, pg_terminate_backend, an idle reaper); an 'error' event
// nobody listens to kills the process. Here every client gets a listener the moment it exists, so a dropped
// connection only fails what was running on it (answered 503 by the HTTP layer, src/database-unavailable.ts).

/** How long a request waits for a connection (a free one of the pool, or a new one) before it is answered 503. */
export const CONNECT_TIMEOUT_MS = 5_000;
/** TCP keep-alive after this much silence: a connection to a server that vanished (a failover) is found dead. */
const KEEP_ALIVE_DELAY_MS = 10_000;

/** What a connection is opened with: the URL, and the settings every service shares (bounded connect, keep-alive). */
export function connectionSettings(url: string, extra: pg.ClientConfig = {}): pg.ClientConfig {
  return {
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEP_ALIVE_DELAY_MS,
    application_name: "egress-agent",
    ...extra,
  };
}

/** Logs a connection's failure once, by its code and message (never the URL, which may hold a password). */
function logLost(logger: Logger, what: string): (err: Error) => void {
  return (err) => logger.warn({ code: (err as { code?: string }).code, reason: err.message }, `${what}: the database connection failed`);
}

/**
 * A pool whose clients can never crash the process: the pool's own 'error' (an idle client's connection ended)
 * and each client's, also while a caller holds it (pg leaves a checked-out client without a listener), are logged.
 * A client whose connection broke is not given out again (pg-pool drops clients that are not queryable).
 */
export function openPool(settings: pg.PoolConfig & { url: string }, logger: Logger, what: string): pg.Pool {
  const { url, ...rest } = settings;
  const pool = new pg.Pool({ ...connectionSettings(url), ...rest });
  const lost = logLost(logger, what);
  pool.on("error", lost);
  pool.on("connect", (client) => client.on("error", lost));
  return pool;
}

/** One client of its own (not from a pool), guarded the same way; the caller connects and ends it. */
export function guardedClient(settings: pg.ClientConfig, logger: Logger, what: string): pg.Client {
  const client = new pg.Client(settings);
  client.on("error", logLost(logger, what));
  return client;
}
