import { HttpError } from "./errors.ts";

// Which failures of a PostgreSQL client mean "the database is away for now" (a restart, a failover, a reaper that
// ended the connection, every connection taken), as opposed to a bug or a bad statement; and when to try again.
// Kept apart from the client (src/pg-pool.ts) so the HTTP layer and the SQLite agent server need not load `pg`.

/** SQLSTATEs of a lost or refused connection: 08 connection exception, 57P01-57P03 shutdown. */
const LOST_STATE = /^(08|57P0[1-3]$)/;
/**
 * SQLSTATE classes and codes that say the database cannot do it now, whatever was asked, its connection still up:
 * 53 insufficient resources (disk full, out of memory, too many connections), 57 operator intervention (a statement
 * timeout or cancel), 58 system error (I/O), 25006 read-only transaction (a failover to a standby), 40001 and 40P01
 * (serialization, deadlock), 55P03 lock not available. A request failing so gets 503 with Retry-After, as for a lost
 * connection: the sidecar sends it again and never takes it for a record's fault (which is 22 data exception or 23
 * integrity, the record's own: a 500, or the schema's 422 before it).
 */
const BUSY_STATE = /^(53|57|58|25006$|40001$|40P01$|55P03$)/;
/** The socket's own failures while connecting or talking. */
const LOST_ERRNO = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);
/**
 * node-postgres words these without a code: the socket ended, a broken client, no connection within
 * connectionTimeoutMillis, a statement refused unsent on a client whose connection was already gone.
 */
const LOST_MESSAGE =
  /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect)|is not queryable$/;

/** Seconds a client is asked to wait before it sends the request again. */
const DATABASE_RETRY_AFTER_S = 5;

/** Whether `err` says the connection is gone (or never came): what ran on it was rolled back, a new one may work. */
export function connectionLost(err: unknown): boolean {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === "string" && (LOST_STATE.test(code) || LOST_ERRNO.has(code))) return true;
  if (err instanceof AggregateError) return err.errors.some(connectionLost); // a refused ::1 and 127.0.0.1
  return typeof message === "string" && LOST_MESSAGE.test(message);
}

/** Whether `err` says the database cannot do it now (worth trying again later), not that the request was wrong. */
export function databaseUnavailable(err: unknown): boolean {
  if (err instanceof DatabaseUnavailableError || connectionLost(err)) return true;
  const { code } = (err ?? {}) as { code?: unknown };
  // SQLite's SQLITE_BUSY (and its extended codes): another connection held the file past the busy timeout.
  return typeof code === "string" && (BUSY_STATE.test(code) || code.startsWith("SQLITE_BUSY"));
}

/** A request that needs the database while it is away: 503 with Retry-After, never a 500. */
export class DatabaseUnavailableError extends HttpError {
  constructor(cause: unknown) {
    const code = (cause as { code?: unknown } | undefined)?.code;
    super(
      "EGRESS_ERR_DATABASE_UNAVAILABLE",
      `the database cannot be reached just now${typeof code === "string" ? ` (${code})` : ""}; nothing of the request was kept, send it again after Retry-After`,
      { "retry-after": String(DATABASE_RETRY_AFTER_S) },
    );
  }
}

/** `err` as the 503 a client can act on when it is the database being away; else `err` itself. */
export function asDatabaseUnavailable(err: unknown): unknown {
  return databaseUnavailable(err) && !(err instanceof DatabaseUnavailableError) ? new DatabaseUnavailableError(err) : err;
}

/**
 * Waits before reconnect attempt `attempt` (1, 2, ...): 0.5 s doubling to 30 s, each with up to a fifth off at
 * random so replicas that lost the database together do not knock together. A database that stays down sees about
 * 120 attempts an hour from each replica, not a flood.
 */
export function reconnectDelayMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(30_000, 500 * 2 ** Math.min(attempt - 1, 16));
  return Math.round(base * (1 - random() * 0.2));
}
