import { isMarkedAsUntransferable } from "node:worker_threads";
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { WriterThread } from "../writer-thread.ts";
import type { IngestBatch } from "./storage.ts";
import type { OtlpRow } from "./otlp-insert.ts";
import { type TraceRows, traceRows } from "./trace-insert.ts";

/** What the writer thread is asked to store: a group of trace batches, or one OTLP request. */
export type IngestRequest = { receivedAt: string } & ({ batches: readonly { licenseId: string; rows: TraceRows }[] } | { otlp: OtlpRow });

// Bundled (scripts/build.ts), the thread is an entry point of its own beside the chunk that holds this code.
const THREAD = new URL(import.meta.url.endsWith(".ts") ? "./ingest-writer-thread.ts" : "./ingest-writer-thread.js", import.meta.url);

/**
 * Commits trace ingests and OTLP requests to beacon.db on a thread of its own (src/beacon/ingest-writer-thread.ts):
 * the inserts and the fsync of a drain's batches were most of the server's time, and while they ran on its thread no
 * other request was parsed or answered. A request is still answered only once its commit returned.
 */
export class IngestWriter {
  readonly #thread: WriterThread<IngestRequest>;

  /** `busyTimeoutMs`: how long a commit waits for another connection's write (an offline import) before it fails. */
  constructor(path: string, options: { busyTimeoutMs?: number; now?: Clock; logger?: Logger | undefined } = {}) {
    this.#thread = new WriterThread(THREAD, {
      name: "the ingest writer",
      workerData: { path, busyTimeoutMs: options.busyTimeoutMs ?? 5000 },
      now: options.now,
      logger: options.logger,
    });
  }

  /** Starts the thread now (the server does at start), so a database it cannot open shows in readiness at once. */
  start(): void {
    this.#thread.start();
  }

  /** Resolves once the thread has opened the database; DatabaseUnavailableError while it cannot (or is lost). */
  ready(): Promise<void> {
    return this.#thread.ready();
  }

  /** Trace batches: rows new per batch, once committed. */
  ingest(batches: readonly IngestBatch[], receivedAt: Date): Promise<number[]> {
    const rows = batches.map((b) => ({ licenseId: b.licenseId, rows: traceRows(b.transactions) }));
    return this.#thread.send({ batches: rows, receivedAt: receivedAt.toISOString() });
  }

  /** One OTLP request, once committed (on this thread too: the server's own commits would stall and cool the writer). */
  async insertOtlp(row: OtlpRow, receivedAt: Date): Promise<void> {
    // Bytes move to the thread (the request is done with them). A view into a larger buffer (Node's pool, which may not
    // move at all) is copied first, or the whole buffer would go.
    let text = row.text;
    if (typeof text !== "string" && (text.byteLength !== text.buffer.byteLength || isMarkedAsUntransferable(text.buffer)))
      text = new Uint8Array(text);
    const transfer = typeof text === "string" ? [] : [text.buffer as ArrayBuffer];
    await this.#thread.send({ otlp: { ...row, text }, receivedAt: receivedAt.toISOString() }, transfer);
  }

  /** Waits for the commits under way, then ends the thread; later ingests fail (503). */
  close(): Promise<void> {
    return this.#thread.close();
  }
}
