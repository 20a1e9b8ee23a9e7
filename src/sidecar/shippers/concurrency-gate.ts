import type { Clock } from "../../clock.ts";

/**
 * How many batches of one stream may be in flight: several while deliveries succeed (the beacon works on one while
 * the next travels), one while the stream fails (it probes, so an outage is never met with a burst), none during
 * a pause.
 */
export class ConcurrencyGate {
  readonly #concurrency: number;
  readonly #now: Clock;
  readonly #inFlight = new Set<Promise<void>>();
  /** Batches retrying after a failed send. Their records are pending again in the outbox: nothing is claimed beside them. */
  readonly #retrying = new Set<object>();
  /** False from a failed attempt until the next delivery. */
  #healthy = true;
  /** No new batch before this time (ms). */
  #pausedUntil = 0;

  constructor(concurrency: number, now: Clock) {
    this.#concurrency = concurrency;
    this.#now = now;
  }

  /** Every batch in flight has its slot taken. */
  full(): boolean {
    return this.#inFlight.size >= (this.#healthy && this.#retrying.size === 0 ? this.#concurrency : 1);
  }

  /** Whether a failing batch may retry where it is: only when it is alone, the one probing. */
  alone(): boolean {
    return this.#inFlight.size <= 1;
  }

  /** Runs a batch in a slot; `onDone` when it has left it. */
  run(shipping: Promise<void>, onDone: () => void): void {
    const tracked = shipping.finally(() => {
      this.#inFlight.delete(tracked);
      onDone();
    });
    this.#inFlight.add(tracked);
  }

  /** Every batch in flight has finished. */
  async drained(): Promise<void> {
    await Promise.all(this.#inFlight);
  }

  pausedMs(): number {
    return this.#pausedUntil - this.#now();
  }

  pauseFor(ms: number): void {
    this.#pausedUntil = Math.max(this.#pausedUntil, this.#now() + ms);
  }

  delivered(): void {
    this.#healthy = true;
  }

  /** A send failed; `batch`, when given, retries and holds the stream to one batch until it settles. */
  failed(batch?: object): void {
    this.#healthy = false;
    if (batch) this.#retrying.add(batch);
  }

  settled(batch: object): void {
    this.#retrying.delete(batch);
  }
}
