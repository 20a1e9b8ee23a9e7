/**
 * The events of one run, kept until it ends: a subscriber reads them from the first (the run's own stream) or from
 * where it attached (a resubscriber, who got the task as it was then), then waits for the next. One run's events
 * are a handful, not a stream of tokens.
 */
export class EventLog<T> {
  readonly #events: T[] = [];
  #closed = false;
  #changed!: Promise<void>;
  #wake!: () => void;
  readonly #onPush: ((event: T) => void) | undefined;

  /** `onPush`: told each event as it is pushed (the replica bus publishes it for other replicas). */
  constructor(onPush?: (event: T) => void) {
    this.#onPush = onPush;
    this.#arm();
  }

  #arm(): void {
    this.#changed = new Promise((resolve) => (this.#wake = resolve));
  }

  push(event: T): void {
    this.#events.push(event);
    this.#onPush?.(event);
    this.#wake();
    this.#arm();
  }

  close(): void {
    this.#closed = true;
    this.#wake();
  }

  /** How many events were pushed so far: `subscribe(length)` reads only those that come after. */
  get length(): number {
    return this.#events.length;
  }

  /** The events from the `from`-th (the first by default), then each as it is pushed, until the log closes. */
  async *subscribe(from = 0): AsyncGenerator<T> {
    for (let next = from; ; ) {
      if (next < this.#events.length) yield this.#events[next++]!;
      else if (this.#closed) return;
      else await this.#changed;
    }
  }
}
