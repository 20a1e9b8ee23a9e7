import type pg from "pg";
import type { ForwardBacklog, ForwardQueue, ForwardRound, QueuedBatch } from "./queue.ts";

const CLAIM = `SELECT q.seq, b.signal, b.license_id AS "licenseId", b.body, q.received_at AS "receivedAt"
  FROM forward_queue q JOIN otlp_batches b ON b.seq = q.seq
  ORDER BY q.seq LIMIT $1 FOR UPDATE OF q SKIP LOCKED`;

/**
 * The queue in the shared database: a round is one transaction holding its batches' rows locked, so that the other
 * replicas' rounds skip them (each batch is sent by one replica) and removals commit with the round.
 */
export class PostgresForwardQueue implements ForwardQueue {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async round<T>(limit: number, work: (round: ForwardRound) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    let broken = false;
    try {
      await client.query("BEGIN");
      const { rows } = await client.query<QueuedBatch & { seq: string }>(CLAIM, [limit]);
      const batches = rows.map((row) => ({ ...row, seq: Number(row.seq) }));
      const result = await work({
        batches,
        done: async (seqs) => {
          if (seqs.length > 0) await client.query("DELETE FROM forward_queue WHERE seq = ANY($1::bigint[])", [seqs]);
        },
      });
      await client.query("COMMIT");
      return result;
    } catch (err) {
      // Rolled back: what the round removed is queued again and is sent again (at least once).
      await client.query("ROLLBACK").catch(() => {
        broken = true;
      });
      throw err;
    } finally {
      client.release(broken);
    }
  }

  async backlog(): Promise<ForwardBacklog> {
    const { rows } = await this.#pool.query<{ batches: string; bytes: string; oldest: string | null }>(
      "SELECT count(*) AS batches, coalesce(sum(bytes), 0) AS bytes, min(received_at) AS oldest FROM forward_queue",
    );
    const row = rows[0]!;
    return { batches: Number(row.batches), bytes: Number(row.bytes), oldestReceivedAt: row.oldest };
  }
}
