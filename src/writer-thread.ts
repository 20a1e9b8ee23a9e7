import { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import type { Clock } from "./clock.ts";
import { DatabaseUnavailableError, reconnectDelayMs } from "./database-unavailable.ts";

/** What a writer thread is asked to commit: a request of the caller's own shape, numbered here. */
export type WriterRequest<Body> = { id: number } & Body;
/** The thread's answer to a request (its numbers, or why nothing was stored), or "open" once it is ready. */
export type WriterReply = { id: number; results: number[] } | { id: number; error: { message: string; code: string | undefined } } | "open";

export interface WriterThreadOptions {
  /** What the logs call it ("the ingest writer"). */
  name: string;
  /** Passed to the thread (its database's path, its settings). */
  workerData: unknown;
  /** Ends the thread once it has had nothing to do for this long (memory back while idle); it starts again on demand. */
  idleMs?: number;
  now?: Clock;
  logger?: Logger | undefined;
}

/**
 * Commits to an SQLite file on a thread of its own (src/writer-thread-loop.ts): a batch's inserts and its fsync took
 * the event loop for as long as they ran, and no other request was read, parsed or answered meanwhile. A request is
 * still answered only once its commit returned. A thread that is lost (or cannot open its file) fails the requests
 * sent to it as the database unavailable (503) and is started again after 0.5 s doubling to 30 s, never once per
 * request.
 */
export class WriterThread<Body> {
  readonly #script: URL;
  readonly #options: WriterThreadOptions;
  readonly #now: Clock;
  #worker: Worker | undefined;
  /** Settles when the current thread has opened the database, or is lost first (readiness). */
  #opened: Promise<void> = Promise.resolve();
  #markOpen: (() => void) | undefined;
  /** Threads lost since one last committed, and when another may start. */
  #failures = 0;
  #restartAt = Number.NEGATIVE_INFINITY;
  #closed = false;
  #idleTimer: NodeJS.Timeout | undefined;
  /** Threads told to end (idle, or closing) until they have: close() waits for each, so none outlives it. */
  readonly #ending = new Map<Worker, Promise<unknown>>();
  /** Each thread's requests not yet answered: a thread lost fails its own, never another's. */
  readonly #pending = new Map<Worker, Map<number, Waiting>>();
  #nextId = 0;

  /** `script`: the thread's entry point (bundled, a file of its own beside the chunk that starts it). */
  constructor(script: URL, options: WriterThreadOptions) {
    this.#script = script;
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Starts the thread now, so a database it cannot open shows in readiness at once. */
  start(): void {
    this.#thread();
  }

  /** Whether a thread is running now (idle ones end, see `idleMs`). */
  get running(): boolean {
    return this.#worker !== undefined;
  }

  /** Resolves once the thread has opened the database; DatabaseUnavailableError while it cannot (or is lost). */
  async ready(): Promise<void> {
    if (!this.#thread()) throw this.#unavailable();
    await this.#opened;
  }

  /** Sends a request (`transfer`: buffers that move to the thread); resolves with its results once committed. */
  send(body: Body, transfer: ArrayBuffer[] = []): Promise<number[]> {
    const worker = this.#thread();
    if (!worker) return Promise.reject(this.#unavailable());
    clearTimeout(this.#idleTimer);
    const id = this.#nextId++;
    worker.postMessage({ ...body, id } satisfies WriterRequest<Body>, transfer);
    const pending = this.#pending.get(worker)!;
    if (pending.size === 0) worker.ref(); // keeps the process up while a commit is owed
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
  }

  /** Waits for the commits under way, then ends the thread; later requests fail (503). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    if (this.#worker) this.#end(this.#worker);
    await Promise.all(this.#ending.values());
  }

  /** Tells a thread to end once its commits are done (it answers them first); the next request starts another. */
  #end(worker: Worker): void {
    if (this.#worker === worker) this.#worker = undefined;
    worker.ref(); // the process waits for the thread's last commit and close
    this.#ending.set(worker, new Promise((resolve) => worker.once("exit", resolve)));
    worker.postMessage("close");
  }

  #unavailable(): DatabaseUnavailableError {
    return new DatabaseUnavailableError(new Error(`${this.#options.name} is not running`));
  }

  /** The running thread, or a new one; none once closed, or while the wait after a lost one runs. */
  #thread(): Worker | undefined {
    if (this.#worker || this.#closed || this.#now() < this.#restartAt) return this.#worker;
    const worker = new Worker(this.#script, { workerData: this.#options.workerData });
    worker.unref(); // idle, it does not keep the process up
    let failOpen: (err: unknown) => void = () => {};
    this.#opened = new Promise((resolve, reject) => {
      this.#markOpen = resolve;
      failOpen = reject;
    });
    this.#opened.catch(() => {}); // read by ready(), if anyone asks
    this.#pending.set(worker, new Map());
    worker.on("message", (reply: WriterReply) => this.#settle(worker, reply));
    // Once per thread ('error' comes before 'exit').
    let gone = false;
    const lost = (err: unknown) => {
      if (gone) return;
      gone = true;
      if (this.#worker === worker) this.#worker = undefined;
      failOpen(new DatabaseUnavailableError(err));
      // Not the records' fault: a 503 the sender sends again, never an error counted against them. (A thread told to
      // end has answered everything first; if it could not, its requests fail too.)
      for (const { reject } of this.#pending.get(worker)!.values()) reject(new DatabaseUnavailableError(err));
      this.#pending.delete(worker);
      if (this.#ending.has(worker) || this.#closed) return; // ended on purpose: no outage, no wait
      this.#restartAt = this.#now() + reconnectDelayMs(++this.#failures);
      // Once per outage, not per attempt.
      if (this.#failures === 1)
        this.#options.logger?.error({ err }, `${this.#options.name} thread stopped; its writes are refused (503) until another starts`);
    };
    worker.on("error", lost);
    worker.on("exit", (code) => {
      lost(new Error(`${this.#options.name} thread exited (${code})`));
      this.#ending.delete(worker);
    });
    this.#worker = worker;
    return worker;
  }

  #settle(worker: Worker, reply: WriterReply): void {
    if (reply === "open") {
      this.#markOpen?.();
      return;
    }
    // The wait before a restart grows until a thread has committed: one that opens, then dies on each request (a poison
    // batch), is not started again per request.
    if (this.#failures > 0 && "results" in reply) {
      this.#options.logger?.info({ attempts: this.#failures }, `${this.#options.name} thread is running again`);
      this.#failures = 0;
    }
    const pending = this.#pending.get(worker);
    const waiting = pending?.get(reply.id);
    pending?.delete(reply.id);
    // A thread told to end stays referenced until it has: the process waits for its close.
    if (pending?.size === 0 && this.#worker === worker) {
      worker.unref();
      this.#endWhenIdle(worker);
    }
    if ("results" in reply) waiting?.resolve(reply.results);
    else waiting?.reject(new Database.SqliteError(reply.error.message, reply.error.code ?? "SQLITE_ERROR"));
  }

  #endWhenIdle(worker: Worker): void {
    const { idleMs } = this.#options;
    if (idleMs === undefined) return;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      if (this.#worker === worker && this.#pending.get(worker)?.size === 0) this.#end(worker);
    }, idleMs);
    this.#idleTimer.unref();
  }
}

interface Waiting {
  resolve(results: number[]): void;
  reject(err: unknown): void;
}
