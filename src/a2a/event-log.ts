/**
 * The events of one run, kept until it ends: each subscriber reads them all from the first, then waits for the
 * next, so a stream that attaches late misses nothing. One run's events are a handful, not a stream of tokens.
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

  async *subscribe(): AsyncGenerator<T> {
    for (let next = 0; ; ) {
      if (next < this.#events.length) yield this.#events[next++]!;
      else if (this.#closed) return;
      else await this.#changed;
    }
  }
}
