import type Database from "better-sqlite3";
import type { KeyValues } from "./key-values.ts";
import type { RecordState, Stream } from "./outbox.ts";

export interface StreamCounts {
  pending: number;
  sending: number;
  completed: number;
  failed: number;
  /** Enqueue time (ms) of the oldest record not yet delivered, if any. */
  oldestPendingAt: number | null;
  /** Records delivered since this outbox was created, whether kept (billing) or deleted (telemetry) since. */
  delivered: number;
}

export interface DeadLetter {
  recordId: string | null;
  error: string | null;
  attempts: number;
}

export const deliveredKey = (stream: Stream) => `delivered.${stream}`;

/**
 * What the queue holds, as status, metrics and the shipper read it. Read-only; statements prepared once (the
 * metrics scrape and the shipper's every batch run them).
 */
export class OutboxStats {
  readonly #kv: KeyValues;
  readonly #byState: Database.Statement;
  readonly #oldest: Database.Statement;
  readonly #deadLetters: Database.Statement;
  readonly #pendingHead: Database.Statement;

  constructor(db: Database.Database, kv: KeyValues) {
    this.#kv = kv;
    // Counted from the index alone; the oldest undelivered is the first by seq of pending or sending.
    this.#byState = db.prepare("SELECT state, count(*) AS n FROM outbox WHERE stream = ? GROUP BY state");
    this.#oldest = db.prepare(
      `SELECT min(enqueued_at) AS oldest FROM outbox WHERE seq IN (
         SELECT (SELECT seq FROM outbox WHERE stream = @stream AND state = 'pending' ORDER BY seq LIMIT 1)
         UNION ALL SELECT (SELECT seq FROM outbox WHERE stream = @stream AND state = 'sending' ORDER BY seq LIMIT 1))`,
    );
    this.#deadLetters = db.prepare(
      "SELECT record_id AS recordId, last_error AS error, attempts FROM outbox WHERE stream = ? AND state = 'failed' ORDER BY seq LIMIT ?",
    );
    // Bounded by @limit: the shipper asks before every batch, and a full scan of a large backlog each time
    // would make a drain quadratic.
    this.#pendingHead = db.prepare(`
      SELECT count(*) AS n, min(enqueued_at) AS oldest, coalesce(sum(size), 0) AS bytes FROM (
        SELECT size, enqueued_at FROM outbox WHERE stream = @stream AND state = 'pending' ORDER BY seq LIMIT @limit)`);
  }

  counts(stream: Stream): StreamCounts {
    const counts: StreamCounts = { pending: 0, sending: 0, completed: 0, failed: 0, oldestPendingAt: null, delivered: 0 };
    for (const row of this.#byState.all(stream) as { state: RecordState; n: number }[]) counts[row.state] = row.n;
    counts.oldestPendingAt = (this.#oldest.get({ stream }) as { oldest: number | null }).oldest;
    counts.delivered = Number(this.#kv.get(deliveredKey(stream)) ?? 0);
    return counts;
  }

  /** Dead letters of a stream, with the receiver's reason. */
  deadLetters(stream: Stream, limit = 100): DeadLetter[] {
    return this.#deadLetters.all(stream, limit) as DeadLetter[];
  }

  /** The oldest `limit` pending records of a stream: how many (at most `limit`), their bytes, the oldest's enqueue time. */
  pendingHead(stream: Stream, limit: number): { count: number; bytes: number; oldestAt: number | null } {
    const row = this.#pendingHead.get({ stream, limit }) as { n: number; oldest: number | null; bytes: number };
    return { count: row.n, bytes: row.bytes, oldestAt: row.oldest };
  }
}
