import type { Logger } from "pino";
import type { Clock, SetClockTimeout } from "../../clock.ts";
import type { UsageMeasures } from "../../protocol/usage-snapshot.ts";
import type { Outbox } from "../storage/outbox.ts";
import type { StreamHealth } from "../storage/stream-health.ts";
import type { MeasuresSource } from "./measures-source.ts";

const WINDOW_KEY = "usage.windowFrom";

/** What the outbox holds for one window; the shipper adds the license key when it sends. */
export interface StoredSnapshot {
  from_timestamp: string;
  to_timestamp: string;
  measures: UsageMeasures;
}

/**
 * The canonical UTC text of an instant (`Z`, milliseconds), as every timestamp that leaves is written (docs/PROTOCOL.md,
 * "Timestamps"). An earlier sidecar kept its window start as `+00:00`; Date.parse reads either as the same instant.
 */
export function utcTimestamp(ms: number): string {
  return new Date(ms).toISOString();
}

export interface SnapshotterOptions {
  outbox: Outbox;
  source: MeasuresSource;
  intervalMs: number;
  /** After a failed read of the counts, try again this soon (the window stays open). */
  retryMs: number;
  logger: Logger;
  /** The usage stream's health: a snapshot that cannot be taken shows in status as its last error. */
  health: StreamHealth;
  onEnqueued: () => void;
  now?: Clock;
  /** setTimeout on `now`'s clock (setTimeout itself unless a test runs a faster clock). */
  setClockTimeout?: SetClockTimeout;
}

/**
 * Takes usage snapshots over contiguous windows: each window starts where the previous one ended (kept in
 * the outbox, so a restart neither skips nor repeats one); the first starts at the first start. A window
 * closes at the last interval boundary that has passed, so downtime makes one longer window, never a gap.
 * The snapshot and the next window's start are committed together.
 */
export class UsageSnapshotter {
  readonly #o: SnapshotterOptions;
  readonly #now: Clock;
  readonly #setClockTimeout: SetClockTimeout;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #running: Promise<void> = Promise.resolve();

  constructor(options: SnapshotterOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#setClockTimeout = options.setClockTimeout ?? setTimeout;
  }

  /** Where the open window starts (set to now on the very first start). */
  windowFrom(): number {
    const stored = this.#o.outbox.kv.get(WINDOW_KEY);
    if (stored) return Date.parse(stored);
    const now = this.#now();
    this.#o.outbox.kv.set(WINDOW_KEY, utcTimestamp(now));
    return now;
  }

  start(): void {
    this.windowFrom();
    this.#schedule(this.#untilDue());
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  #untilDue(): number {
    return Math.max(0, this.windowFrom() + this.#o.intervalMs - this.#now());
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    // Due at a time on the clock (the window's end), not after a fixed wait: its clock's timer.
    this.#timer = this.#setClockTimeout(() => {
      this.#running = this.tick().then((ok) => this.#schedule(ok ? this.#untilDue() : this.#o.retryMs));
    }, ms);
  }

  /** Closes the open window if an interval has passed. Returns false when the counts could not be read. */
  async tick(): Promise<boolean> {
    const { outbox, intervalMs, source, logger } = this.#o;
    const from = this.windowFrom();
    const intervals = Math.floor((this.#now() - from) / intervalMs);
    if (intervals < 1) return true;
    const to = from + intervals * intervalMs;
    let measures: UsageMeasures;
    try {
      measures = await source.current();
    } catch (err) {
      logger.warn({ source: source.name, reason: (err as Error).message }, "usage snapshot postponed: counts unavailable");
      this.#o.health.failure(`snapshot postponed: ${(err as Error).message}`);
      return false;
    }
    const snapshot: StoredSnapshot = { from_timestamp: utcTimestamp(from), to_timestamp: utcTimestamp(to), measures };
    try {
      outbox.atomically(() => {
        outbox.enqueue("usage", [{ recordId: snapshot.from_timestamp, body: JSON.stringify(snapshot) }]);
        outbox.kv.set(WINDOW_KEY, snapshot.to_timestamp);
      });
    } catch (err) {
      // A full data dir: the window stays open (nothing was committed) and is closed at the next try.
      logger.warn({ err, from: snapshot.from_timestamp }, "usage snapshot postponed: it could not be stored");
      this.#o.health.failure(`snapshot postponed: it could not be stored: ${(err as Error).message}`);
      return false;
    }
    logger.info({ from: snapshot.from_timestamp, to: snapshot.to_timestamp, source: source.name }, "usage snapshot taken");
    this.#o.onEnqueued();
    return true;
  }
}
