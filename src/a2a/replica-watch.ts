import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import type { Task } from "../protocol/a2a.ts";
import type { Lease, TaskStore } from "./task-store.ts";

/** The runs of this replica, as the watch sees them: their leases, checked at each heartbeat. */
export interface LeasedRuns {
  leases(): Lease[];
  /** These runs' tasks were taken over (this replica stalled past the timeout): they stop, writing nothing. */
  lost(leases: readonly Lease[]): void;
}

export interface ReplicaWatchOptions {
  store: TaskStore;
  /** A replica silent this long is taken for dead; this one announces itself three times as often. */
  timeoutMs: number;
  /** The task as a run that is gone leaves it (failed, with a message saying so). */
  failed: (task: Task) => Task;
  runs: LeasedRuns;
  logger: Logger;
  now: Clock;
}

/**
 * Replicas on one database: each announces itself on a schedule and, at the same time, fails the unfinished tasks
 * of replicas that went silent (a `kill -9`, a lost node), so a task never waits for a run that is gone. One
 * process on SQLite needs none of it: its own start fails what the last stop left. A replica that was only stalled
 * (its event loop blocked past the timeout) learns at its next heartbeat which of its runs were taken over.
 */
export class ReplicaWatch {
  readonly #options: ReplicaWatchOptions;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<void> = Promise.resolve();
  /** When this replica last announced itself; undefined before its first announcement. */
  #announcedAt: number | undefined;
  /** After this replica was cut off from the database, it fails nobody's tasks before this time. */
  #quietUntil = 0;

  constructor(options: ReplicaWatchOptions) {
    this.#options = options;
  }

  /** Announces this replica and sweeps once (before serving), then every third of the timeout. */
  async start(): Promise<void> {
    await this.sweep();
    this.#timer = setInterval(() => void this.sweep(), Math.max(1, Math.floor(this.#options.timeoutMs / 3)));
    this.#timer.unref();
  }

  /** One round: a failure (the database away) is logged and the next round tries again; rounds never overlap. */
  sweep(): Promise<void> {
    this.#sweeping = this.#sweeping.then(async () => {
      const { store, failed, runs, logger, now } = this.#options;
      try {
        await store.heartbeat(now());
        const leases = runs.leases();
        const lost = leases.length > 0 ? await store.lost(leases) : [];
        if (lost.length > 0) runs.lost(lost);
        if (this.#backFromOutage()) return;
        const gone = await store.failUnfinished(failed, now());
        if (gone > 0) logger.warn({ tasks: gone }, "tasks of a replica that stopped answering are failed");
      } catch (err) {
        logger.warn({ reason: (err as Error).message }, "the replica heartbeat failed; trying again at the next one");
      }
    });
    return this.#sweeping;
  }

  /**
   * Whether this replica has just got the database back after missing a timeout's worth of announcements: the
   * others could not announce themselves either, so their silence says nothing yet. They get a full timeout to
   * announce themselves again before this replica takes any of them for dead.
   */
  #backFromOutage(): boolean {
    const { now, timeoutMs, logger } = this.#options;
    const at = now();
    const cutOff = this.#announcedAt !== undefined && at - this.#announcedAt > timeoutMs;
    this.#announcedAt = at;
    if (cutOff) {
      this.#quietUntil = at + timeoutMs;
      logger.info("the database is back after a replica timeout: other replicas' tasks are failed only if they stay silent");
    }
    return at < this.#quietUntil;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#sweeping;
  }
}
