import type { Logger } from "pino";
import type { Clock } from "../../clock.ts";
import { WriterThread } from "../../writer-thread.ts";
import type { RecordColumns } from "./outbox-insert.ts";

/** One billing batch for the writer thread, with the sidecar's clock's time (enqueued_at). */
export interface BillingRequest {
  now: number;
  records: RecordColumns;
}

// Bundled (scripts/build.ts), the thread is an entry point of its own beside the chunk that holds this code.
const THREAD = new URL(import.meta.url.endsWith(".ts") ? "./billing-writer-thread.ts" : "./billing-writer-thread.js", import.meta.url);

/**
 * A thread that has had no batch for this long ends (most of its memory back: an idle sidecar holds about 89 MiB with
 * it, 81 after it, bench/RESULTS.md); the next batch starts another (tens of milliseconds). An instance that sends
 * every few seconds keeps it.
 */
const IDLE_MS = 30_000;

/**
 * The billing intake's commits to outbox.db, on a thread of its own with its own connection
 * (billing-writer-thread.ts): the inserts and the fsync were half of the intake's time on the event loop, where no
 * other batch was parsed meanwhile. A batch is answered only once its commit returned, as before; batches that arrive
 * while one commits share the next commit.
 */
export class BillingWriter {
  readonly #thread: WriterThread<BillingRequest>;
  readonly #now: Clock;

  constructor(dataDir: string, options: { now?: Clock; logger?: Logger; idleMs?: number } = {}) {
    this.#now = options.now ?? Date.now;
    this.#thread = new WriterThread(THREAD, {
      name: "the billing intake's writer",
      workerData: { dataDir },
      idleMs: options.idleMs ?? IDLE_MS,
      logger: options.logger,
      now: this.#now,
    });
  }

  /** Commits one batch's records to the billing stream; resolves with how many were new (an id held is skipped). */
  async enqueue(records: RecordColumns): Promise<number> {
    const [inserted] = await this.#thread.send({ now: this.#now(), records });
    return inserted!;
  }

  /** Whether its thread runs now (it ends when idle). */
  get running(): boolean {
    return this.#thread.running;
  }

  /** Waits for the commits under way, then ends the thread; later batches fail (503). */
  close(): Promise<void> {
    return this.#thread.close();
  }
}
