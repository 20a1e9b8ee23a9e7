import { statfsSync } from "node:fs";
import type { Logger } from "pino";
import type { Clock } from "../../clock.ts";
import { HttpError } from "../../errors.ts";

/**
 * Free space kept on the data dir's file system for delivering what is already queued: claiming, acking and
 * auditing a batch are SQLite writes too (WAL frames, checkpoints). Billing intake stops below it (507), so an
 * outbox that filled its volume during a long beacon outage still drains once the beacon is back.
 */
export const DELIVERY_RESERVE_BYTES = 16 * 2 ** 20;
/** Operational telemetry stops being kept below twice the reserve: the last of the disk goes to billing. */
const TELEMETRY_RESERVE_FACTOR = 2;
/**
 * Telemetry's check may reuse a reading this recent when it showed at least this many times its threshold free: asking
 * the file system on every OTLP request was 1.5% of the sidecar's CPU in the relay (bench/). Near the threshold, and
 * for billing always, every request asks. A volume filled faster than that meanwhile still fails the write (SQLITE_FULL:
 * the telemetry is dropped as disk_full, as it would have been).
 */
const TELEMETRY_READING_MS = 100;
const TELEMETRY_READING_MARGIN = 4;

/** Errors that mean "no space left" (SQLite's SQLITE_FULL is ENOSPC on a write; SHMSIZE on its shared-memory file). */
export function isDiskFull(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "SQLITE_FULL" || code === "SQLITE_IOERR_SHMSIZE" || code === "ENOSPC";
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

type Level = "room" | "telemetry-refused" | "full";

/**
 * Watches the free space of the data dir's volume for the sources: billing intake is refused (507) below
 * DELIVERY_RESERVE_BYTES, operational telemetry dropped below twice that. A change of state is logged once,
 * and intake resumes by itself as soon as there is room again.
 */
export class DataDirSpace {
  readonly #dataDir: string;
  readonly #logger: Logger;
  readonly #reserveBytes: number;
  readonly #statfs: (path: string) => { bavail: number; bsize: number; blocks?: number };
  readonly #now: Clock;
  #level: Level = "room";
  /** The last reading that left telemetry far from its threshold, and when it was taken. */
  #roomyReadingAt = Number.NEGATIVE_INFINITY;

  constructor(
    dataDir: string,
    options: {
      logger: Logger;
      reserveBytes?: number;
      statfs?: (path: string) => { bavail: number; bsize: number; blocks?: number };
      now?: Clock;
    },
  ) {
    this.#dataDir = dataDir;
    this.#logger = options.logger;
    this.#reserveBytes = options.reserveBytes ?? DELIVERY_RESERVE_BYTES;
    this.#statfs = options.statfs ?? statfsSync;
    this.#now = options.now ?? Date.now;
  }

  /** Bytes an unprivileged writer may still use on the data dir's volume (Infinity when it cannot be told). */
  freeBytes(): number {
    try {
      const stats = this.#statfs(this.#dataDir);
      return Number(stats.bavail) * Number(stats.bsize);
    } catch {
      return Infinity; // no answer: intake goes on, and a write that does not fit is still a 507 (SQLITE_FULL)
    }
  }

  /** The data dir volume's size and what an unprivileged writer may still use of it, for /metrics; undefined when unknown. */
  volume(): { sizeBytes: number; freeBytes: number } | undefined {
    try {
      const stats = this.#statfs(this.#dataDir);
      if (stats.blocks === undefined) return undefined;
      return { sizeBytes: Number(stats.blocks) * Number(stats.bsize), freeBytes: Number(stats.bavail) * Number(stats.bsize) };
    } catch {
      return undefined;
    }
  }

  /** Throws the 507 to answer when billing records must not be taken now. */
  assertRoomForBilling(): void {
    const free = this.freeBytes();
    this.#observe(free);
    if (free < this.#reserveBytes) {
      throw new HttpError(
        "EGRESS_ERR_DISK_FULL",
        `the data dir ${this.#dataDir} has ${mib(free)} free, less than the ${mib(this.#reserveBytes)} kept for delivering what is queued; ` +
          "nothing of this batch was stored: free space on that volume (or grow it), then send the batch again",
      );
    }
  }

  /** Whether operational telemetry may be kept now. */
  roomForTelemetry(): boolean {
    const now = this.#now();
    if (now - this.#roomyReadingAt < TELEMETRY_READING_MS && now >= this.#roomyReadingAt) return true;
    const free = this.freeBytes();
    this.#observe(free);
    const threshold = this.#reserveBytes * TELEMETRY_RESERVE_FACTOR;
    this.#roomyReadingAt = free >= threshold * TELEMETRY_READING_MARGIN ? now : Number.NEGATIVE_INFINITY;
    return free >= threshold;
  }

  /** A write failed for want of space (the volume filled faster than the reserve): the 507 to answer. */
  full(what = "this batch"): HttpError {
    this.#change("full", 0);
    return new HttpError(
      "EGRESS_ERR_DISK_FULL",
      `the data dir ${this.#dataDir} is full; nothing of ${what} was stored: free space on that volume (or grow it), then send it again`,
    );
  }

  #observe(free: number): void {
    const level: Level =
      free < this.#reserveBytes ? "full" : free < this.#reserveBytes * TELEMETRY_RESERVE_FACTOR ? "telemetry-refused" : "room";
    this.#change(level, free);
  }

  #change(level: Level, free: number): void {
    // Any sign of a fuller disk (billing's reading, a failed write) ends the reuse of telemetry's last roomy reading.
    if (level !== "room") this.#roomyReadingAt = Number.NEGATIVE_INFINITY;
    if (level === this.#level) return;
    const fields = { dataDir: this.#dataDir, freeBytes: free, reserveBytes: this.#reserveBytes };
    if (level === "room") this.#logger.info(fields, "data dir has room again: intake resumed");
    else if (level === "full") this.#logger.warn(fields, "data dir full: billing intake refused with 507, operational telemetry dropped");
    else if (this.#level === "full")
      this.#logger.info(fields, "data dir has room again for billing: intake resumed, operational telemetry still dropped");
    else this.#logger.warn(fields, "data dir nearly full: operational telemetry dropped, billing still taken");
    this.#level = level;
  }
}
