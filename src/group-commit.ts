/**
 * Coalesces the writes of requests handled in the same event-loop turn into one transaction (SQLite's, or
 * PostgreSQL's): one fsync for several requests instead of one each. Each caller still learns of its own commit (or of
 * its own error) before it answers, so nothing is acknowledged before it is on disk.
 *
 * A group whose transaction fails (and so stored nothing) for what may be one job's fault is committed again job by
 * job, each in a transaction of its own: one sender's job that the database refuses fails that sender alone, never
 * the others it happened to share a turn with. Their jobs must be safe to repeat (the beacon's and the outbox's
 * inserts skip an id already stored). A failure that is no job's (`sharedFailure`: the database away, a full disk)
 * fails the whole group at once: each job alone would only meet it again.
 */
export class GroupCommit<Job, Result> {
  readonly #commit: (jobs: readonly Job[]) => Result[] | Promise<Result[]>;
  readonly #sharedFailure: (err: unknown) => boolean;
  #waiting: Waiting<Job, Result>[] = [];

  /** `commit` writes every job in one transaction and returns each job's result, in order. */
  constructor(commit: (jobs: readonly Job[]) => Result[] | Promise<Result[]>, sharedFailure: (err: unknown) => boolean) {
    this.#commit = commit;
    this.#sharedFailure = sharedFailure;
  }

  /** Resolves with the job's result once it is committed. */
  submit(job: Job): Promise<Result> {
    return new Promise((resolve, reject) => {
      // setImmediate runs after the I/O callbacks of this turn: requests parsed meanwhile join the group.
      if (this.#waiting.push({ job, resolve, reject }) === 1) setImmediate(() => this.#flush());
    });
  }

  async #flush(): Promise<void> {
    const group = this.#waiting;
    this.#waiting = [];
    try {
      const results = await this.#commit(group.map((w) => w.job));
      for (const [i, w] of group.entries()) w.resolve(results[i]!);
    } catch (err) {
      if (group.length === 1 || this.#sharedFailure(err)) for (const w of group) w.reject(err);
      // Side by side: a job waits one commit more, not one per job of its group (a pool bounds the connections).
      else await Promise.all(group.map((w) => this.#commitAlone(w)));
    }
  }

  async #commitAlone(w: Waiting<Job, Result>): Promise<void> {
    try {
      const [result] = await this.#commit([w.job]);
      w.resolve(result!);
    } catch (err) {
      w.reject(err);
    }
  }
}

interface Waiting<Job, Result> {
  job: Job;
  resolve(result: Result): void;
  reject(err: unknown): void;
}
