import { isMarkedAsUntransferable, Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { DatabaseUnavailableError, reconnectDelayMs } from "../database-unavailable.ts";
import type { IngestBatch } from "./storage.ts";
import type { OtlpRow } from "./otlp-insert.ts";
import { type TraceRows, traceRows } from "./trace-insert.ts";

/** What the writer thread is asked to store: a group of trace batches, or one OTLP request. */
export type WriterRequest = { id: number; receivedAt: string } & (
  | { batches: readonly { licenseId: string; rows: TraceRows }[] }
  | { otlp: OtlpRow }
);
/** The thread's answer to a request (rows new per batch, or why none were stored), or "open" once it is ready. */
export type WriterReply =
  | { id: number; inserted: number[] }
  | { id: number; error: { message: string; code: string | undefined } }
  | "open";

// Bundled (scripts/build.ts), the thread is an entry point of its own beside the chunk that holds this code.
const THREAD = new URL(import.meta.url.endsWith(".ts") ? "./ingest-writer-thread.ts" : "./ingest-writer-thread.js", import.meta.url);

/**
 * Commits trace ingests and OTLP requests to beacon.db on a thread of its own (src/beacon/ingest-writer-thread.ts):
 * the inserts and the fsync of a drain's batches were most of the server's time, and while they ran on its thread no
 * other request was parsed or answered. A request is still answered only once its commit returned.
 */
export class IngestWriter {
  readonly #path: string;
  readonly #busyTimeoutMs: number;
  readonly #now: Clock;
  readonly #logger: Logger | undefined;
  #worker: Worker | undefined;
  /** Settles when the current thread has opened the database, or is lost first (readiness). */
  #opened: Promise<void> = Promise.resolve();
  #markOpen: (() => void) | undefined;
  /** Threads lost since one last opened the database, and when another may start (a file that cannot be opened is
   * not tried again per request: 0.5 s doubling to 30 s, reconnectDelayMs). */
  #failures = 0;
  #restartAt = Number.NEGATIVE_INFINITY;
  #closed = false;
  readonly #pending = new Map<number, { resolve(inserted: number[]): void; reject(err: unknown): void }>();
  #nextId = 0;

  /** `busyTimeoutMs`: how long a commit waits for another connection's write (an offline import) before it fails. */
  constructor(path: string, options: { busyTimeoutMs?: number; now?: Clock; logger?: Logger | undefined } = {}) {
    this.#path = path;
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger;
  }

  /** Starts the thread now (the server does at start), so a database it cannot open shows in readiness at once. */
  start(): void {
    this.#thread();
  }

  /** Resolves once the thread has opened the database; DatabaseUnavailableError while it cannot (or is lost). */
  async ready(): Promise<void> {
    if (!this.#thread()) throw new DatabaseUnavailableError(new Error("the ingest writer is not running"));
    await this.#opened;
  }

  /** Trace batches: rows new per batch, once committed. */
  ingest(batches: readonly IngestBatch[], receivedAt: Date): Promise<number[]> {
    const rows = batches.map((b) => ({ licenseId: b.licenseId, rows: traceRows(b.transactions) }));
    return this.#send((id) => ({ id, batches: rows, receivedAt: receivedAt.toISOString() }));
  }

  /** One OTLP request, once committed (on this thread too: the server's own commits would stall and cool the writer). */
  async insertOtlp(row: OtlpRow, receivedAt: Date): Promise<void> {
    // Bytes move to the thread (the request is done with them). A view into a larger buffer (Node's pool, which may not
    // move at all) is copied first, or the whole buffer would go.
    let text = row.text;
    if (typeof text !== "string" && (text.byteLength !== text.buffer.byteLength || isMarkedAsUntransferable(text.buffer)))
      text = new Uint8Array(text);
    const transfer = typeof text === "string" ? [] : [text.buffer as ArrayBuffer];
    await this.#send((id) => ({ id, otlp: { ...row, text }, receivedAt: receivedAt.toISOString() }), transfer);
  }

  #send(request: (id: number) => WriterRequest, transfer: ArrayBuffer[] = []): Promise<number[]> {
    const worker = this.#thread();
    if (!worker) return Promise.reject(new DatabaseUnavailableError(new Error("the ingest writer is not running")));
    const id = this.#nextId++;
    worker.postMessage(request(id), transfer);
    if (this.#pending.size === 0) worker.ref(); // keeps the process up while a commit is owed
    return new Promise((resolve, reject) => this.#pending.set(id, { resolve, reject }));
  }

  /** Waits for the commits under way, then ends the thread; later ingests fail (503). */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    if (!worker) return;
    const exited = new Promise((resolve) => worker.once("exit", resolve));
    worker.ref(); // the process waits for the thread's last commit and close
    worker.postMessage("close");
    await exited;
  }

  /** The running thread, or a new one; none once closed, or while the wait after a lost one runs. */
  #thread(): Worker | undefined {
    if (this.#worker || this.#closed || this.#now() < this.#restartAt) return this.#worker;
    const worker = new Worker(THREAD, { workerData: { path: this.#path, busyTimeoutMs: this.#busyTimeoutMs } });
    worker.unref(); // idle, it does not keep the process up
    let failOpen: (err: unknown) => void = () => {};
    this.#opened = new Promise((resolve, reject) => {
      this.#markOpen = resolve;
      failOpen = reject;
    });
    this.#opened.catch(() => {}); // read by ready(), if anyone asks
    worker.on("message", (reply: WriterReply) => this.#settle(worker, reply));
    // Once per thread ('error' comes before 'exit'): a new thread may hold jobs of its own by the time this one exits.
    let gone = false;
    const lost = (err: unknown) => {
      if (gone) return;
      gone = true;
      this.#worker = undefined;
      failOpen(new DatabaseUnavailableError(err));
      if (this.#closed) return;
      this.#restartAt = this.#now() + reconnectDelayMs(++this.#failures);
      // Once per outage, not per attempt.
      if (this.#failures === 1)
        this.#logger?.error({ err }, "the ingest writer thread stopped; ingests are refused (503) until another starts");
      // Not the records' fault: a 503 the sidecar sends again, never a 500 counted against them.
      for (const { reject } of this.#pending.values()) reject(new DatabaseUnavailableError(err));
      this.#pending.clear();
    };
    worker.on("error", lost);
    worker.on("exit", (code) => lost(new Error(`the ingest writer thread exited (${code})`)));
    this.#worker = worker;
    return worker;
  }

  #settle(worker: Worker, reply: WriterReply): void {
    if (reply === "open") {
      if (this.#failures > 0) this.#logger?.info({ attempts: this.#failures }, "the ingest writer thread is running again");
      this.#failures = 0;
      this.#markOpen?.();
      return;
    }
    const waiting = this.#pending.get(reply.id);
    this.#pending.delete(reply.id);
    if (this.#pending.size === 0) worker.unref();
    if ("inserted" in reply) waiting?.resolve(reply.inserted);
    else waiting?.reject(new Database.SqliteError(reply.error.message, reply.error.code ?? "SQLITE_ERROR"));
  }
}
