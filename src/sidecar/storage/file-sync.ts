import { closeSync, fsync, openSync } from "node:fs";
import { EgressError } from "../../errors.ts";

/** fsync(2) of an open descriptor, run on libuv's thread pool: the event loop keeps serving meanwhile. */
const fsyncOnPool = (fd: number) => new Promise<void>((resolve, reject) => fsync(fd, (err) => (err ? reject(err) : resolve())));

/**
 * Syncs one file for commits made without waiting for the disk (outbox-file.ts, commitDurably): a caller that has
 * committed and then awaits `sync()` has its commit on disk when it resolves. Callers that come while a sync is
 * running share the next one: the running one may have begun before their commit, so it cannot count for them.
 *
 * One descriptor, opened with the file: Linux reports a failed write-back once to each descriptor open when it
 * happened, so it sees a failure even when SQLite's own sync (a checkpoint's, which SQLite does not report) saw it
 * first, and the pages whose write failed are then clean in memory: a later sync would succeed without them. So the
 * first failure is final (`failure`): every sync after it is refused, until the process starts again and reads the
 * file back from disk.
 */
export class FileSync {
  readonly #fd: number;
  readonly #fsync: (fd: number) => Promise<void>;
  #running: Promise<void> | undefined;
  #next: Promise<void> | undefined;
  #failure: EgressError | undefined;
  #closed = false;
  readonly #onFailure: ((failure: EgressError) => void) | undefined;

  /** `fsync`: the sync of the descriptor (a test passes one it controls); `onFailure`: told once, when syncs stop. */
  constructor(path: string, o: { fsync?: (fd: number) => Promise<void>; onFailure?: (failure: EgressError) => void } = {}) {
    this.#fd = openSync(path, "r");
    this.#fsync = o.fsync ?? fsyncOnPool;
    this.#onFailure = o.onFailure;
  }

  /** Why syncs are refused for good (the disk reported a write error), or undefined while they are not. */
  get failure(): EgressError | undefined {
    return this.#failure;
  }

  sync(): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (!this.#running) return this.#start();
    this.#next ??= this.#running
      .catch(() => undefined) // a failure is latched: #start refuses
      .then(() => {
        this.#next = undefined;
        return this.#start();
      });
    return this.#next;
  }

  /** Closes the descriptor once no sync is using it (a number closed under a running sync could be reused meanwhile). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const pending = this.#next ?? this.#running;
    if (pending) void pending.catch(() => undefined).finally(() => closeSync(this.#fd));
    else closeSync(this.#fd);
  }

  #start(): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(new EgressError("EGRESS_ERR_OUTBOX_SYNC", "the outbox is closed"));
    const running = this.#fsync(this.#fd).then(
      () => {
        if (this.#running === running) this.#running = undefined;
      },
      (err: unknown) => {
        if (this.#running === running) this.#running = undefined;
        if (!this.#failure) {
          const reason = (err as NodeJS.ErrnoException).code ?? String(err);
          this.#failure = new EgressError(
            "EGRESS_ERR_OUTBOX_SYNC",
            `the disk reported a write error on the outbox (fsync: ${reason}); billing intake is refused until the sidecar restarts and reads it back from disk`,
          );
          this.#onFailure?.(this.#failure);
        }
        throw this.#failure;
      },
    );
    this.#running = running;
    return running;
  }
}
