import type Database from "better-sqlite3";
import type { ForwardBacklog, ForwardQueue, ForwardRound, QueuedBatch } from "./queue.ts";

/** The queue in beacon.db: one beacon process, one forwarder, so a round needs no claim. */
export class SqliteForwardQueue implements ForwardQueue {
  readonly #claim: Database.Statement;
  readonly #remove: Database.Statement;
  readonly #backlog: Database.Statement;
  readonly #db: Database.Database;

  constructor(db: Database.Database) {
    this.#db = db;
    this.#claim = db.prepare(`SELECT q.seq, b.signal, b.license_id AS licenseId, b.body, q.received_at AS receivedAt
      FROM forward_queue q JOIN otlp_batches b ON b.seq = q.seq ORDER BY q.seq LIMIT ?`);
    this.#remove = db.prepare("DELETE FROM forward_queue WHERE seq = ?");
    this.#backlog = db.prepare(
      "SELECT count(*) AS batches, coalesce(sum(bytes), 0) AS bytes, min(received_at) AS oldestReceivedAt FROM forward_queue",
    );
  }

  async round<T>(limit: number, work: (round: ForwardRound) => Promise<T>): Promise<T> {
    const batches = this.#claim.all(limit) as QueuedBatch[];
    const remove = this.#db.transaction((seqs: readonly number[]) => {
      for (const seq of seqs) this.#remove.run(seq);
    });
    return work({ batches, done: async (seqs) => remove(seqs) });
  }

  async backlog(): Promise<ForwardBacklog> {
    return this.#backlog.get() as ForwardBacklog;
  }
}
