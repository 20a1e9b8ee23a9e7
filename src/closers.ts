/**
 * What a service started, closed in reverse order. Every closer runs even when one before it throws (a shipper
 * that fails to stop must not leave the outbox open or the data dir locked); the first failure is rethrown after.
 */
export class Closers {
  readonly #stack: Array<() => unknown> = [];

  /** Registers what undoes the step just taken; it runs before everything registered earlier. */
  add(close: () => unknown): void {
    this.#stack.push(close);
  }

  async closeAll(): Promise<void> {
    const failures: unknown[] = [];
    for (let close = this.#stack.pop(); close; close = this.#stack.pop()) {
      try {
        await close();
      } catch (err) {
        failures.push(err);
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, `${failures.length} parts failed to close`);
  }

  /** Runs a start-up; when it throws, what was already started is closed before the error goes on. */
  async starting<T>(start: () => Promise<T>): Promise<T> {
    try {
      return await start();
    } catch (err) {
      await this.closeAll().catch(() => {}); // the start-up error is the one worth reporting
      throw err;
    }
  }
}
