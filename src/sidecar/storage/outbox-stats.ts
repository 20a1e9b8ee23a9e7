import type Database from "better-sqlite3";
import type { Claims } from "./claims.ts";
import type { KeyValues } from "./key-values.ts";
import type { RecordState, Stream } from "./outbox.ts";
import { type StoredKey, storedId, storedKeyColumns } from "./record-key.ts";

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

export interface HeadEntry {
  seq: number;
  size: number;
  enqueuedAt: number;
}

export interface DeadLetter {
  recordId: string | null;
  error: string | null;
  attempts: number;
}

export const deliveredKey = (stream: Stream) => `delivered.${stream}`;

/** Rows pendingHead reads itself, looking for a batch's bytes, before it leaves the sum to SQLite. */
const HEAD_ROWS_READ = 64;

/**
 * What the queue holds, as status, metrics and the shipper read it. Read-only; statements prepared once (the
 * metrics scrape and the shipper's every batch run them).
 */
export class OutboxStats {
  readonly #kv: KeyValues;
  readonly #claims: Claims;
  readonly #byState: Database.Statement;
  readonly #oldest: Database.Statement;
  readonly #deadLetters: Database.Statement;
  readonly #head: Database.Statement;
  readonly #headSummary: Database.Statement;

  /** `claims`: the records being sent, which the file holds as pending. */
  constructor(db: Database.Database, kv: KeyValues, claims: Claims) {
    this.#kv = kv;
    this.#claims = claims;
    // Counted from the index alone; the oldest undelivered is the first pending by seq (being sent or not).
    this.#byState = db.prepare("SELECT state, count(*) AS n FROM outbox WHERE stream = ? GROUP BY state");
    this.#oldest = db.prepare("SELECT enqueued_at AS oldest FROM outbox WHERE stream = ? AND state = 'pending' ORDER BY seq LIMIT 1");
    this.#deadLetters = db.prepare(
      `SELECT ${storedKeyColumns("record_id")}, last_error AS error, attempts FROM outbox WHERE stream = ? AND state = 'failed' ORDER BY seq LIMIT ?`,
    );
    // From the index alone, bounded by the limit: the shipper asks before every batch, and a full scan of a large
    // backlog each time would make a drain quadratic.
    this.#head = db.prepare(
      "SELECT seq, size, enqueued_at AS enqueuedAt FROM outbox WHERE stream = ? AND state = 'pending' AND seq >= ? ORDER BY seq LIMIT ?",
    );
    this.#headSummary = db.prepare(`
      SELECT count(*) AS n, coalesce(sum(size), 0) AS bytes, min(enqueued_at) AS oldest FROM (
        SELECT size, enqueued_at FROM outbox WHERE stream = ? AND state = 'pending' AND seq >= ? ORDER BY seq LIMIT ?)`);
  }

  counts(stream: Stream): StreamCounts {
    const counts: StreamCounts = { pending: 0, sending: 0, completed: 0, failed: 0, oldestPendingAt: null, delivered: 0 };
    for (const row of this.#byState.all(stream) as { state: RecordState; n: number }[]) counts[row.state] = row.n;
    counts.sending = this.#claims.count(stream);
    counts.pending -= counts.sending;
    counts.oldestPendingAt = (this.#oldest.get(stream) as { oldest: number } | undefined)?.oldest ?? null;
    counts.delivered = Number(this.#kv.get(deliveredKey(stream)) ?? 0);
    return counts;
  }

  /** Dead letters of a stream, with the receiver's reason. */
  deadLetters(stream: Stream, limit = 100): DeadLetter[] {
    const rows = this.#deadLetters.all(stream, limit) as (StoredKey & Omit<DeadLetter, "recordId">)[];
    return rows.map((row) => ({ recordId: storedId(row), error: row.error, attempts: row.attempts }));
  }

  /** The oldest `limit` pending records of a stream not being sent, in order: seq, body bytes, enqueue time. */
  head(stream: Stream, limit: number): HeadEntry[] {
    if (limit <= 0) return [];
    // From where the records being sent end (most of them), reading as many more rows as are in flight beyond it:
    // cheaper than a filter in SQL (NOT IN a JSON list), and than walking the whole flight for every batch.
    const from = this.#claims.scanFrom(stream);
    const skip = this.#claims.countFrom(stream, from);
    const rows = this.#head.all(stream, from, limit + skip) as HeadEntry[];
    return skip === 0 ? rows : rows.filter((row) => !this.#claims.has(stream, row.seq)).slice(0, limit);
  }

  /**
   * The oldest `limit` pending records of a stream not being sent: how many (at most `limit`), their bytes, the
   * oldest's enqueue time. With `maxBytes` the reading may stop at the record that takes the bytes to it: a backlog
   * of large telemetry records fills a batch's bytes in a few dozen, and the shipper asks on every OTLP request.
   */
  pendingHead(stream: Stream, limit: number, maxBytes = Infinity): { count: number; bytes: number; oldestAt: number | null } {
    const from = this.#claims.scanFrom(stream);
    // Records being sent lie among the head: the rows themselves, as head() skips them.
    if (this.#claims.countFrom(stream, from) > 0) return summed(this.head(stream, limit), maxBytes);
    if (maxBytes !== Infinity && limit > 0) {
      // A few dozen rows read here find a batch of large records; past them SQLite's sum is cheaper than a row each.
      const probe = this.#head.all(stream, from, Math.min(limit, HEAD_ROWS_READ)) as HeadEntry[];
      const head = summed(probe, maxBytes);
      if (probe.length < HEAD_ROWS_READ || head.count >= limit || head.bytes >= maxBytes) return head;
    }
    // Summed by SQLite from the index, no row made for JavaScript.
    const row = this.#headSummary.get(stream, from, limit) as { n: number; bytes: number; oldest: number | null };
    return { count: row.n, bytes: row.bytes, oldestAt: row.oldest };
  }
}

/** How many of `entries` (in order) it takes to reach `maxBytes`, or all of them; their bytes and the oldest's time. */
function summed(entries: readonly HeadEntry[], maxBytes: number): { count: number; bytes: number; oldestAt: number | null } {
  let count = 0;
  let bytes = 0;
  let oldestAt: number | null = null;
  for (const entry of entries) {
    if (bytes >= maxBytes) break;
    count++;
    bytes += entry.size;
    oldestAt = Math.min(oldestAt ?? entry.enqueuedAt, entry.enqueuedAt); // a clock set back makes a later seq older
  }
  return { count, bytes, oldestAt };
}
