import { open } from "node:fs/promises";

/** fsync(2) of the file at `path`, run on libuv's thread pool: the event loop keeps serving meanwhile. */
export async function fsyncFile(path: string): Promise<void> {
  const file = await open(path, "r");
  try {
    await file.sync();
  } finally {
    await file.close();
  }
}

/**
 * Syncs one file for commits made without waiting for the disk (outbox-file.ts, commitDurably): a caller that has
 * committed and then awaits `sync()` has its commit on disk when it resolves. Callers that come while a sync is
 * running share the next one: the running one may have begun before their commit, so it cannot count for them.
 */
export class FileSync {
  readonly #path: string;
  readonly #fsync: (path: string) => Promise<void>;
  #running: Promise<void> | undefined;
  #next: Promise<void> | undefined;

  /** `fsync`: the sync itself (fsyncFile); a test passes one it controls. */
  constructor(path: string, fsync: (path: string) => Promise<void> = fsyncFile) {
    this.#path = path;
    this.#fsync = fsync;
  }

  sync(): Promise<void> {
    if (!this.#running) return this.#start();
    this.#next ??= this.#running
      .catch(() => undefined) // its failure is its own callers'; the next sync is a new attempt
      .then(() => {
        this.#next = undefined;
        return this.#start();
      });
    return this.#next;
  }

  #start(): Promise<void> {
    const running = this.#fsync(this.#path).finally(() => {
      if (this.#running === running) this.#running = undefined;
    });
    this.#running = running;
    return running;
  }
}
