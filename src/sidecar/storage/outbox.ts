import type Database from "better-sqlite3";
import type { Logger } from "pino";
import type { Clock } from "../../clock.ts";
import type { KeyValues } from "./key-values.ts";
import { OutboxFile } from "./outbox-file.ts";
import type { OutboxHistory } from "./outbox-history.ts";
import { openOutboxToRead, openOutboxToWrite, openTelemetryToRead, openTelemetryToWrite } from "./outbox-schema.ts";
import type { OutboxStats } from "./outbox-stats.ts";
import { closeCleanly, markOpen } from "./telemetry-check.ts";
import { moveTelemetryRows } from "./telemetry-move.ts";
import {
  type ByteCap,
  type CappedEnqueueResult,
  type OutboxRecord,
  type Stream,
  TELEMETRY_STREAMS,
  type TelemetryStream,
} from "./outbox-types.ts";

// The file's place and its read-only opening live with the schema; importers keep reaching them here.
export { openOutboxReadonly, outboxPath, telemetryPath } from "./outbox-schema.ts";
export type { StreamCounts } from "./outbox-stats.ts";
export * from "./outbox-types.ts";

/** What status, metrics and the shippers read of each stream, wherever it is kept. */
export type StreamStats = Pick<OutboxStats, "counts" | "deadLetters" | "head" | "pendingHead">;
/** The records kept after delivery and their retention, over both files. */
export type History = Pick<OutboxHistory, "records" | "pruneCompleted">;

const telemetryStreams: ReadonlySet<Stream> = new Set(TELEMETRY_STREAMS);

/**
 * The sidecar's queue, in two SQLite files of the data dir (WAL), one per promise:
 * - `outbox.db` (synchronous FULL): billing and usage. A record is on disk before enqueue returns, so a caller may
 *   acknowledge it; beside the queue, committing with it, `kv` (small values) and `history` (export and retention).
 * - `telemetry.db` (synchronous OFF): the OTLP signals, best effort. Their commits and checkpoints wait for no disk
 *   sync, which was a tenth of the relay's time (bench/RESULTS.md); a process crash keeps what they hold, a power cut
 *   may lose it, and a file it damaged is replaced at the next start (data-dir.ts).
 * Each stream lives in one file; the methods take the stream and go to its file.
 */
export class Outbox {
  readonly #main: OutboxFile;
  readonly #telemetry: OutboxFile;
  /** Kept to mark telemetry.db as closed cleanly (a tool's read-only view marks nothing). */
  readonly #telemetryToMark: Database.Database | undefined;
  readonly kv: KeyValues;
  readonly history: History;
  readonly stats: StreamStats;

  /** `readonly`: for tools (export, preview) that read beside a running sidecar and must not touch its state. */
  constructor(dataDir: string, options: { now?: Clock; readonly?: boolean; logger?: Logger } = {}) {
    const { now, readonly } = options;
    const mainDb = readonly ? openOutboxToRead(dataDir) : openOutboxToWrite(dataDir);
    let telemetryDb: Database.Database | undefined;
    try {
      telemetryDb = readonly ? openTelemetryToRead(dataDir) : openTelemetryToWrite(dataDir);
      if (!readonly) moveTelemetryRows(mainDb, telemetryDb, options.logger);
      this.#main = new OutboxFile(mainDb, { now, readonly, durable: true });
      if (!readonly) markOpen(this.#main.kv);
      this.#telemetry = new OutboxFile(telemetryDb, { now, readonly, durable: false });
      this.#telemetryToMark = readonly ? undefined : telemetryDb;
    } catch (err) {
      telemetryDb?.close();
      mainDb.close();
      throw err;
    }
    this.kv = this.#main.kv;
    this.history = {
      records: (stream) => this.#file(stream).history.records(stream),
      pruneCompleted: (before) => this.#main.history.pruneCompleted(before) + this.#telemetry.history.pruneCompleted(before),
    };
    const stats = (stream: Stream) => this.#file(stream).stats;
    this.stats = {
      counts: (stream) => stats(stream).counts(stream),
      deadLetters: (stream, limit) => stats(stream).deadLetters(stream, limit),
      head: (stream, limit) => stats(stream).head(stream, limit),
      pendingHead: (stream, limit, maxBytes) => stats(stream).pendingHead(stream, limit, maxBytes),
    };
  }

  #file(stream: Stream): OutboxFile {
    return telemetryStreams.has(stream) ? this.#telemetry : this.#main;
  }

  /**
   * Commits records in one transaction. A record whose id the stream already holds is skipped (not sent
   * twice). Returns how many were new.
   */
  enqueue(stream: Stream, records: readonly { recordId?: string; body: string | Buffer; attempts?: number }[]): number {
    return this.#file(stream).enqueue(stream, records);
  }

  /**
   * Enqueues best-effort telemetry under a byte cap shared by `cap.streams`: the oldest undelivered records of those
   * streams (pending or dead-lettered, never one being sent) are deleted first to make room. New records that alone
   * exceed the cap are not stored. One transaction: the cap holds after every commit.
   */
  enqueueWithinCap(
    stream: TelemetryStream,
    records: readonly { body: string | Buffer }[],
    cap: ByteCap<TelemetryStream>,
  ): CappedEnqueueResult {
    return this.enqueueAllWithinCap([{ stream, records }], cap)[0]!;
  }

  /** enqueueWithinCap for several requests' records in one transaction (concurrent OTLP requests share a commit). */
  enqueueAllWithinCap(
    entries: readonly { stream: TelemetryStream; records: readonly { body: string | Buffer }[] }[],
    cap: ByteCap<TelemetryStream>,
  ): CappedEnqueueResult[] {
    return this.#telemetry.enqueueAllWithinCap(entries, cap);
  }

  /**
   * Marks up to `limit` of the oldest pending records (and about `maxBytes` of bodies; at least one record)
   * as sending and returns them, oldest first.
   */
  claim(stream: Stream, limit: number, maxBytes?: number): OutboxRecord[] {
    return this.#file(stream).claim(stream, limit, maxBytes);
  }

  /** The records `claim` would return now, left as they are (preview). */
  peek(stream: Stream, limit: number, maxBytes?: number): OutboxRecord[] {
    return this.#file(stream).peek(stream, limit, maxBytes);
  }

  /** Delivered: kept as completed until the retention period prunes it. */
  ack(stream: Stream, seqs: readonly number[]): void {
    this.#file(stream).ack(stream, seqs);
  }

  /** Delivered, and not worth keeping (best-effort telemetry): deleted at once, still counted as delivered. */
  remove(stream: Stream, seqs: readonly number[]): void {
    this.#file(stream).remove(stream, seqs);
  }

  /** Deletes every undelivered record of a stream (its switch was turned off). Returns how many went. */
  discard(stream: Stream): number {
    return this.#file(stream).discard(stream);
  }

  /**
   * A failed send: back to pending with one more failed attempt and the reason. The only place the count
   * changes: `records` (held for the retry) are given the stored count, which their next send reports.
   */
  fail(stream: Stream, records: readonly OutboxRecord[], error: string): void {
    this.#file(stream).fail(records, error);
  }

  /** Refused for good by the receiver: kept on disk as failed (dead letter), shown in status, never sent again. */
  deadLetter(stream: Stream, seqs: readonly number[], error: string): void {
    this.#file(stream).deadLetter(seqs, error);
  }

  /** Not sent after all (shutdown): pending again without counting an attempt. Memory only: it cannot fail. */
  release(stream: Stream, seqs: readonly number[]): void {
    this.#file(stream).release(seqs);
  }

  /** Runs `work` in one transaction of outbox.db: every enqueue (of its streams) and kv write inside commits together. */
  atomically<T>(work: () => T): T {
    return this.#main.atomically(work);
  }

  close(): void {
    try {
      if (this.#telemetryToMark?.open) closeCleanly(this.#telemetryToMark, this.kv);
      this.#telemetry.close();
    } finally {
      this.#main.close();
    }
  }
}
