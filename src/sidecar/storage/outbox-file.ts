import type Database from "better-sqlite3";
import type { Clock } from "../../clock.ts";
import { Claims } from "./claims.ts";
import { KeyValues } from "./key-values.ts";
import { OutboxHistory } from "./outbox-history.ts";
import { OutboxInserter } from "./outbox-insert.ts";
import { deliveredKey, OutboxStats } from "./outbox-stats.ts";
import { type ByteCap, type CappedEnqueueResult, type OutboxRecord, STREAMS, type Stream } from "./outbox-types.ts";
import { StoredRecord, type StoredRow, storedKeyColumns } from "./record-key.ts";

/** Streams as an SQL list (Stream values, never input): lets a query use an index that leads with `stream`. */
const sqlList = (streams: readonly Stream[]) => streams.map((stream) => `'${stream}'`).join(", ");

/**
 * The seqs of a batch, bound as one JSON array (`@seqs`): one statement per batch rather than one per record,
 * a quarter off an ack (bench/: the send path's bookkeeping is most of the sidecar's work in a drain).
 */
const seqList = "SELECT value FROM json_each(@seqs)";

/**
 * One file of the outbox (outbox.ts): a queue of records in SQLite (WAL). In a durable file (outbox.db, synchronous
 * FULL) a record is on disk before enqueue returns, so a caller may acknowledge it; in telemetry.db (synchronous OFF)
 * it has reached the operating system. Nothing leaves the file except by ack or prune. Beside the queue, on the same
 * connection (their writes commit with it): `kv` (small values), `stats` (what it holds), `history` (export and
 * retention).
 */
export class OutboxFile {
  readonly kv: KeyValues;
  readonly stats: OutboxStats;
  readonly history: OutboxHistory;
  readonly #db: Database.Database;
  readonly #now: Clock;
  readonly #inserter: OutboxInserter;
  readonly #records: Database.Statement;
  readonly #claims = new Claims();
  readonly #capStatements = new Map<string, { held: Database.Statement; oldest: Database.Statement }>();
  readonly #setState: Database.Statement;
  readonly #fail: Database.Statement;
  readonly #delete: Database.Statement;
  readonly #discard: Database.Statement;
  /** Prepared once: db.pragma() compiles its statement on every call, and every send and OTLP request switches. */
  readonly #syncNormal: Database.Statement | undefined;
  readonly #syncFull: Database.Statement | undefined;

  /**
   * `db`: the file's connection, opened by outbox-schema.ts (the file takes it over). `durable`: commits are synced
   * (synchronous FULL, send-path bookkeeping NORMAL); otherwise the file syncs nothing and the connection is left as
   * it was set. `readonly`: for tools (export) that read beside a running sidecar and must not touch its state.
   */
  constructor(db: Database.Database, options: { now?: Clock; readonly?: boolean; durable: boolean }) {
    this.#now = options.now ?? Date.now;
    this.#db = db;
    // An older sidecar wrote claims to the file ('sending'): nobody is sending them now.
    if (!options.readonly)
      this.#db.prepare(`UPDATE outbox SET state = 'pending' WHERE stream IN (${sqlList(STREAMS)}) AND state = 'sending'`).run();
    this.#inserter = new OutboxInserter(this.#db);
    this.#records = this.#db.prepare(
      `SELECT seq, ${storedKeyColumns("record_id")}, CAST(body AS BLOB) AS body, attempts FROM outbox WHERE seq IN (${seqList}) ORDER BY seq`,
    );
    this.#setState = this.#db.prepare(`UPDATE outbox SET state = @state, updated_at = @now, last_error = @error WHERE seq IN (${seqList})`);
    this.#fail = this.#db.prepare(
      `UPDATE outbox SET state = 'pending', attempts = attempts + 1, updated_at = @now, last_error = @error WHERE seq IN (${seqList})
       RETURNING seq, attempts`,
    );
    this.#delete = this.#db.prepare(`DELETE FROM outbox WHERE seq IN (${seqList})`);
    this.#discard = this.#db.prepare("DELETE FROM outbox WHERE stream = ? AND state != 'completed'");
    if (options.durable) {
      this.#syncNormal = this.#db.prepare("PRAGMA synchronous = NORMAL");
      this.#syncFull = this.#db.prepare("PRAGMA synchronous = FULL");
    }
    this.kv = new KeyValues(this.#db);
    this.stats = new OutboxStats(this.#db, this.kv, this.#claims);
    this.history = new OutboxHistory(this.#db, sqlList(STREAMS));
  }

  /**
   * Commits records in one transaction. A record whose id the stream already holds is skipped (not sent
   * twice). Returns how many were new.
   */
  enqueue(stream: Stream, records: readonly { recordId?: string; body: string | Buffer; attempts?: number }[]): number {
    const columns = {
      recordIds: records.map((r) => r.recordId),
      bodies: records.map((r) => r.body),
      attempts: records.map((r) => r.attempts ?? 0),
    };
    return this.#db.transaction(() => this.#inserter.insert(stream, columns, this.#now()))();
  }

  /**
   * Enqueues best-effort records under a byte cap shared by `cap.streams`: the oldest undelivered records of
   * those streams (pending or dead-lettered, never one being sent) are deleted first to make room. New
   * records that alone exceed the cap are not stored. One transaction: the cap holds after every commit.
   */
  enqueueWithinCap(stream: Stream, records: readonly { body: string | Buffer }[], cap: ByteCap): CappedEnqueueResult {
    return this.enqueueAllWithinCap([{ stream, records }], cap)[0]!;
  }

  /**
   * enqueueWithinCap for several requests' records in one transaction, each with its own result, as if enqueued one
   * after the other: concurrent OTLP requests share a commit (and the cap's sum is read once).
   */
  enqueueAllWithinCap(
    entries: readonly { stream: Stream; records: readonly { body: string | Buffer }[] }[],
    cap: ByteCap,
  ): CappedEnqueueResult[] {
    const queries = this.#capQueries(cap.streams);
    // Best effort: not fsynced where the file is durable (in telemetry.db nothing is).
    return this.#relaxed(() =>
      this.#db.transaction(() => {
        let held = (queries.held.get() as { held: number }).held;
        return entries.map(({ stream, records }) => {
          const incoming = records.reduce((total, r) => total + Buffer.byteLength(r.body), 0);
          if (incoming > cap.maxBytes) return { inserted: 0, droppedRecords: records.length, droppedBytes: incoming };
          const result = { inserted: 0, ...this.#makeRoom(queries.oldest, held + incoming - cap.maxBytes, cap.streams) };
          result.inserted = this.enqueue(stream, records);
          held += incoming - result.droppedBytes;
          return result;
        });
      })(),
    );
  }

  /** Deletes the oldest undelivered records of the capped streams (not one being sent) until `excess` bytes are gone. */
  #makeRoom(oldest: Database.Statement, excess: number, streams: readonly Stream[]): { droppedRecords: number; droppedBytes: number } {
    if (excess <= 0) return { droppedRecords: 0, droppedBytes: 0 };
    const victims: number[] = [];
    let droppedBytes = 0;
    for (const row of oldest.iterate() as Iterable<{ seq: number; size: number }>) {
      if (droppedBytes >= excess) break;
      if (streams.some((stream) => this.#claims.has(stream, row.seq))) continue;
      victims.push(row.seq);
      droppedBytes += row.size;
    }
    this.#delete.run({ seqs: JSON.stringify(victims) });
    return { droppedRecords: victims.length, droppedBytes };
  }

  /** The cap's two queries, prepared once per set of streams (every OTLP request runs them). */
  #capQueries(streams: readonly Stream[]): { held: Database.Statement; oldest: Database.Statement } {
    // Literal stream names, so the planner can use the partial size index (outbox_telemetry_size).
    const list = sqlList(streams);
    let queries = this.#capStatements.get(list);
    if (!queries) {
      queries = {
        held: this.#db.prepare(`SELECT coalesce(sum(size), 0) AS held FROM outbox WHERE stream IN (${list}) AND state != 'completed'`),
        oldest: this.#db.prepare(`SELECT seq, size FROM outbox WHERE stream IN (${list}) AND state IN ('pending', 'failed') ORDER BY seq`),
      };
      this.#capStatements.set(list, queries);
    }
    return queries;
  }

  /**
   * Marks up to `limit` of the oldest pending records (and about `maxBytes` of bodies; at least one record)
   * as sending and returns them, oldest first.
   */
  claim(stream: Stream, limit: number, maxBytes = Number.MAX_SAFE_INTEGER): OutboxRecord[] {
    const records = this.peek(stream, limit, maxBytes);
    this.#claims.add(
      stream,
      records.map((r) => r.seq),
    );
    return records;
  }

  /** The records `claim` would return now, left as they are (preview). */
  peek(stream: Stream, limit: number, maxBytes = Number.MAX_SAFE_INTEGER): OutboxRecord[] {
    const seqs: number[] = [];
    let bytes = 0;
    for (const { seq, size } of this.stats.head(stream, limit)) {
      bytes += size;
      if (bytes > maxBytes && seqs.length > 0) break; // the first record goes whatever its size
      seqs.push(seq);
    }
    return seqs.length === 0 ? [] : (this.#records.all({ seqs: JSON.stringify(seqs) }) as StoredRow[]).map((row) => new StoredRecord(row));
  }

  /** Delivered: kept as completed until the retention period prunes it. */
  ack(stream: Stream, seqs: readonly number[]): void {
    this.#delivered(stream, seqs, () =>
      this.#setState.run({ seqs: JSON.stringify(seqs), now: this.#now(), state: "completed", error: null }),
    );
  }

  /** Delivered, and not worth keeping (best-effort telemetry): deleted at once, still counted as delivered. */
  remove(stream: Stream, seqs: readonly number[]): void {
    this.#delivered(stream, seqs, () => this.#delete.run({ seqs: JSON.stringify(seqs) }));
  }

  #delivered(stream: Stream, seqs: readonly number[], settle: () => Database.RunResult): void {
    this.#relaxed(() =>
      this.#db.transaction(() => {
        const { changes } = settle();
        this.kv.add(deliveredKey(stream), changes);
      })(),
    );
    this.#claims.settle(seqs);
  }

  /** Deletes every undelivered record of a stream (its switch was turned off). Returns how many went. */
  discard(stream: Stream): number {
    const { changes } = this.#discard.run(stream);
    this.#claims.clear(stream);
    return changes;
  }

  /**
   * A failed send: back to pending with one more failed attempt and the reason. The only place the count
   * changes: `records` (held for the retry) are given the stored count, which their next send reports.
   */
  fail(records: readonly OutboxRecord[], error: string): void {
    const rows = this.#fail.all({ seqs: JSON.stringify(records.map((r) => r.seq)), now: this.#now(), error }) as {
      seq: number;
      attempts: number;
    }[];
    const stored = new Map(rows.map((row) => [row.seq, row.attempts]));
    for (const record of records) record.attempts = stored.get(record.seq) ?? record.attempts;
    this.#claims.giveBack(records.map((r) => r.seq));
  }

  /** Refused for good by the receiver: kept on disk as failed (dead letter), shown in status, never sent again. */
  deadLetter(seqs: readonly number[], error: string): void {
    this.#setState.run({ seqs: JSON.stringify(seqs), now: this.#now(), state: "failed", error });
    this.#claims.settle(seqs);
  }

  /** Not sent after all (shutdown): pending again without counting an attempt. Memory only: it cannot fail. */
  release(seqs: readonly number[]): void {
    this.#claims.giveBack(seqs);
  }

  /**
   * Runs send-path bookkeeping (ack, remove) without waiting for fsync, in a durable file. Losing it to a power cut
   * is harmless: a lost ack only re-sends records the beacon already holds, which it skips by id. There intake
   * (enqueue) always commits with synchronous FULL, and that fsync also makes every earlier relaxed commit durable.
   */
  #relaxed<T>(work: () => T): T {
    if (!this.#syncNormal) return work();
    this.#syncNormal.run();
    try {
      return work();
    } finally {
      this.#syncFull!.run();
    }
  }

  /** Runs `work` in one transaction: every enqueue and setValue inside commits together or not at all. */
  atomically<T>(work: () => T): T {
    return this.#db.transaction(work)();
  }

  close(): void {
    if (this.#db.open) this.#db.close();
  }
}
