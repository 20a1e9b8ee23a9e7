import type pg from "pg";
import { connectionLost } from "./database-unavailable.ts";

/** A deadlock or a serialization failure: the transaction did nothing and may run again. */
const RETRYABLE = new Set(["40P01", "40001"]);

/** node-postgres refused the statement without sending it: the connection was already gone (nothing committed). */
const neverSent = (err: unknown) => /is not queryable$/.test((err as Error).message);

/**
 * Runs `work` in one transaction on a client of `pool` (the beacon's and the agent server's PostgreSQL stores);
 * again, up to `attempts` times in all, when PostgreSQL broke a deadlock or a serialization conflict. A connection
 * lost before COMMIT was sent (a restart, pg_terminate_backend) rolled everything back: the transaction runs once
 * more on a new connection. One lost during COMMIT is not run again (it may have committed): its error goes to the
 * caller, answered 503, and the client's retry is deduplicated as any other.
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>, attempts = 1): Promise<T> {
  for (let attempt = 1, reconnected = false; ; attempt++) {
    const client = await pool.connect();
    let committing = false;
    let lost = false;
    try {
      await client.query("BEGIN");
      const result = await work(client);
      committing = true;
      await client.query("COMMIT");
      return result;
    } catch (err) {
      // Only a connection that is gone: a deadlock, a timeout or a full disk leave it healthy, rolled back here.
      lost = connectionLost(err);
      if (!lost) await client.query("ROLLBACK").catch(() => {});
      if (lost && (!committing || neverSent(err)) && !reconnected) {
        reconnected = true;
        attempt--;
        continue;
      }
      if (attempt >= attempts || !RETRYABLE.has((err as { code?: string }).code ?? "")) throw err;
    } finally {
      // A client whose connection broke leaves the pool.
      client.release(lost);
    }
  }
}
