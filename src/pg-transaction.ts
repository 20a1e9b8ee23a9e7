import type pg from "pg";

/** A deadlock or a serialization failure: the transaction did nothing and may run again. */
const RETRYABLE = new Set(["40P01", "40001"]);

/**
 * Runs `work` in one transaction on a client of `pool` (the beacon's and the agent server's PostgreSQL stores);
 * again, up to `attempts` times in all, when PostgreSQL broke a deadlock or a serialization conflict.
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>, attempts = 1): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {});
      if (attempt >= attempts || !RETRYABLE.has((err as { code?: string }).code ?? "")) throw err;
    } finally {
      client.release();
    }
  }
}
