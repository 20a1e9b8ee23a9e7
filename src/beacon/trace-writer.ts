import { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import { DatabaseUnavailableError } from "../database-unavailable.ts";
import type { IngestBatch } from "./storage.ts";
import { type TraceRows, traceRows } from "./trace-insert.ts";

/** One group of batches for the writer thread, and its answer: rows new per batch, or why none were stored. */
export interface WriterRequest {
  id: number;
  batches: readonly { licenseId: string; rows: TraceRows }[];
  receivedAt: string;
}
export interface WriterReply {
  id: number;
  inserted?: number[];
  error?: { message: string; code: string | undefined } | undefined;
}

// Bundled (scripts/build.ts), the thread is an entry point of its own beside the chunk that holds this code.
const THREAD = new URL(import.meta.url.endsWith(".ts") ? "./trace-writer-thread.ts" : "./trace-writer-thread.js", import.meta.url);

/**
 * Commits trace ingests to beacon.db on a thread of its own (src/beacon/trace-writer-thread.ts): the inserts and
 * the fsync of a drain's batches were most of the server's time, and while they ran on its thread no other request
 * was parsed or answered. A batch is still answered only once its commit returned.
 */
export class TraceWriter {
  readonly #path: string;
  readonly #busyTimeoutMs: number;
  #worker: Worker | undefined;
  readonly #pending = new Map<number, { resolve(inserted: number[]): void; reject(err: unknown): void }>();
  #nextId = 0;

  /** `busyTimeoutMs`: how long a commit waits for another connection's write (an offline import) before it fails. */
  constructor(path: string, options: { busyTimeoutMs?: number } = {}) {
    this.#path = path;
    this.#busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  }

  ingest(batches: readonly IngestBatch[], receivedAt: Date): Promise<number[]> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      const request: WriterRequest = {
        id,
        batches: batches.map((b) => ({ licenseId: b.licenseId, rows: traceRows(b.transactions) })),
        receivedAt: receivedAt.toISOString(),
      };
      this.#thread().postMessage(request);
    });
  }

  /** Waits for the commits under way, then ends the thread. */
  async close(): Promise<void> {
    const worker = this.#worker;
    if (!worker) return;
    const exited = new Promise((resolve) => worker.once("exit", resolve));
    worker.postMessage("close");
    await exited;
  }

  #thread(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(THREAD, { workerData: { path: this.#path, busyTimeoutMs: this.#busyTimeoutMs } });
    worker.on("message", (reply: WriterReply) => this.#settle(reply));
    // A thread that died (it never should) fails what it held; the next ingest starts another.
    // Once per thread ('error' comes before 'exit'): a new thread may hold jobs of its own by the time this one exits.
    let gone = false;
    const lost = (err: unknown) => {
      if (gone) return;
      gone = true;
      this.#worker = undefined;
      for (const { reject } of this.#pending.values()) reject(err);
      this.#pending.clear();
    };
    worker.on("error", lost);
    worker.on("exit", (code) => lost(new Error(`the trace writer thread exited (${code})`)));
    this.#worker = worker;
    return worker;
  }

  #settle(reply: WriterReply): void {
    const waiting = this.#pending.get(reply.id);
    this.#pending.delete(reply.id);
    if (reply.inserted) {
      waiting?.resolve(reply.inserted);
      return;
    }
    const err = new Database.SqliteError(reply.error?.message ?? "the trace writer failed", reply.error?.code ?? "SQLITE_ERROR");
    // Another connection's long write (an offline true-up's import) held the file past the wait: send it again later.
    waiting?.reject(err.code === "SQLITE_BUSY" ? new DatabaseUnavailableError(err) : err);
  }
}
