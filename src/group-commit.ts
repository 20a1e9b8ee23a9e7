/**
 * Coalesces the writes of requests handled in the same event-loop turn into one transaction (SQLite's, or
 * PostgreSQL's): one fsync for several requests instead of one each. Each caller still learns of its own commit (or of the
 * error that stored nothing of the group) before it answers, so nothing is acknowledged before it is on disk.
 */
export class GroupCommit<Job, Result> {
  readonly #commit: (jobs: readonly Job[]) => Result[] | Promise<Result[]>;
  #waiting: { job: Job; resolve(result: Result): void; reject(err: unknown): void }[] = [];

  /** `commit` writes every job in one transaction and returns each job's result, in order. */
  constructor(commit: (jobs: readonly Job[]) => Result[] | Promise<Result[]>) {
    this.#commit = commit;
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
    let results: Result[];
    try {
      results = await this.#commit(group.map((w) => w.job));
    } catch (err) {
      for (const w of group) w.reject(err);
      return;
    }
    for (const [i, w] of group.entries()) w.resolve(results[i]!);
  }
}
