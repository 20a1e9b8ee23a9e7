import { randomBytes } from "node:crypto";
import type pg from "pg";
import type { Logger } from "pino";
import { DatabaseListener, type ListenClient } from "../pg-listener.ts";
import { inTransaction } from "../pg-transaction.ts";
import { databaseUnavailable, reconnectDelayMs } from "../database-unavailable.ts";
import { type StreamEvent, TERMINAL_STATES, type TaskStatus } from "../protocol/a2a.ts";
import type { Lease, TaskStore } from "./task-store.ts";

/** How long a follower waits for a notification before it reads anyway (a notification lost with a connection). */
const POLL_MS = 5_000;
/** How long a follower waits for a finished run's last events before it takes the task as it ended instead. */
const END_GRACE_MS = 1_000;
/** Any number taken once for the cluster: replicas starting together make the bus's secret one at a time. */
const BUS_LOCK = 0x6132_6273; // "a2bs"

/** The channels' names: what a role needs to know to hear the runs' task ids or to cancel a run. */
interface Channels {
  events: string;
  cancel: string;
}

/**
 * What replicas on one PostgreSQL database tell each other about running tasks, with no broker beside it: each
 * event of a run goes to a2a_task_events (LISTEN/NOTIFY wakes the followers), and a cancel is a notification the
 * replica running the task acts on. So tasks/get shows a task's live status, and tasks/resubscribe and
 * tasks/cancel work, from whichever replica a request reaches. The LISTEN connection reconnects by itself when the
 * database drops it; then every follower reads again what it may have missed.
 */
export class ReplicaBus {
  readonly #pool: pg.Pool;
  readonly #channels: Channels;
  readonly #listener: DatabaseListener;
  readonly #waiters = new Map<string, Set<() => void>>();
  #onCancel: (taskId: string) => void = () => {};

  private constructor(pool: pg.Pool, channels: Channels, listenClient: () => ListenClient, logger: Logger) {
    this.#pool = pool;
    this.#channels = channels;
    this.#listener = new DatabaseListener({
      client: listenClient,
      channels: [channels.events, channels.cancel],
      onNotification: (channel, taskId) => {
        if (channel === channels.cancel) this.#onCancel(taskId);
        else for (const wake of this.#waiters.get(taskId) ?? []) wake();
      },
      // Events published while the connection was down woke nobody here: every follower reads again.
      onReconnect: () => {
        for (const waiters of this.#waiters.values()) for (const wake of waiters) wake();
      },
      logger,
    });
  }

  /** `listenClient`: a new client for the LISTEN connection (one of its own, outside the pool). */
  static async open(pool: pg.Pool, listenClient: () => ListenClient, logger: Logger): Promise<ReplicaBus> {
    const bus = new ReplicaBus(pool, await channelsOf(pool), listenClient, logger);
    await bus.#listener.start();
    return bus;
  }

  /** Whether the LISTEN connection is up (a replica without it misses cancels: it is not ready). */
  get connected(): boolean {
    return this.#listener.connected;
  }

  /** Who stops a run when another replica asks. */
  onCancel(handler: (taskId: string) => void): void {
    this.#onCancel = handler;
  }

  /**
   * Keeps one event of a run (`seq` from 0, in order) and wakes the followers, while the run's lease holds; false,
   * nothing kept, when its task was taken over. FOR SHARE: a takeover committing meanwhile is waited for and seen.
   */
  async publish(lease: Lease, seq: number, event: StreamEvent, now: number): Promise<boolean> {
    const { rows } = await this.#pool.query<{ held: boolean }>(
      `WITH lease AS (SELECT id FROM a2a_tasks WHERE id = $1 AND owner = $5 AND epoch = $6 FOR SHARE),
       kept AS (INSERT INTO a2a_task_events (task_id, seq, event, created_at) SELECT id, $2, $3, $4 FROM lease ON CONFLICT DO NOTHING RETURNING 1)
       SELECT EXISTS (SELECT 1 FROM lease) AS held, CASE WHEN EXISTS (SELECT 1 FROM kept) THEN pg_notify($7, $1) END AS notified`,
      [lease.taskId, seq, JSON.stringify(event), now, lease.owner, lease.epoch, this.#channels.events],
    );
    return rows[0]?.held === true;
  }

  /** A task resumed (a graph's question answered) starts its events again from 0: the last run's are dropped. */
  async reset(lease: Lease): Promise<void> {
    await this.#pool.query(
      "DELETE FROM a2a_task_events WHERE task_id = $1 AND EXISTS (SELECT 1 FROM a2a_tasks WHERE id = $1 AND owner = $2 AND epoch = $3)",
      [lease.taskId, lease.owner, lease.epoch],
    );
  }

  async requestCancel(taskId: string): Promise<void> {
    await this.#pool.query("SELECT pg_notify($2, $1)", [taskId, this.#channels.cancel]);
  }

  /** Where a run is: the seq its next event will have, and the status its last events carry (if any does yet). */
  async position(taskId: string): Promise<{ next: number; status: TaskStatus | undefined }> {
    const { rows } = await this.#pool.query<{ seq: number; event: string }>(
      "SELECT seq, event FROM a2a_task_events WHERE task_id = $1 ORDER BY seq DESC",
      [taskId],
    );
    const withStatus = rows.map((row) => JSON.parse(row.event) as StreamEvent).find((event) => "status" in event);
    return { next: rows.length > 0 ? rows[0]!.seq + 1 : 0, status: withStatus && (withStatus.status as TaskStatus) };
  }

  /**
   * A run on another replica, event by event from the `from`-th (its first by default), until its final status; when the run is gone without
   * one (its replica died, and the task was failed), the task as it ended. While the database is away the follower
   * waits (with backoff) and then reads on from where it was.
   */
  async *follow(taskId: string, store: TaskStore, from = 0): AsyncGenerator<StreamEvent> {
    for (let next = from, failures = 0, graced = false; ; ) {
      const wake = this.#arm(taskId);
      try {
        let read: { events: { seq: number; event: StreamEvent }[]; ended: StreamEvent | undefined };
        try {
          read = await this.#read(taskId, next, store);
          failures = 0;
        } catch (err) {
          if (!databaseUnavailable(err)) throw err;
          await sleep(reconnectDelayMs(++failures));
          continue;
        }
        for (const { seq, event } of read.events) {
          next = seq + 1;
          yield event;
          if (event.kind === "status-update" && event.final) return;
        }
        if (read.ended && !graced) {
          // A run's own end commits before its last events are kept (src/a2a/replica-runs.ts): they come within
          // moments, and only a run whose replica died has none. Waited for once, briefly.
          graced = true;
          await Promise.race([wake.promise, sleep(END_GRACE_MS)]);
          continue;
        }
        if (read.ended) {
          yield read.ended;
          return;
        }
        if (read.events.length === 0) await Promise.race([wake.promise, sleep(POLL_MS)]);
      } finally {
        wake.release();
      }
    }
  }

  /** The run's events from `next` on; when there are none, the task if it has ended. */
  async #read(
    taskId: string,
    next: number,
    store: TaskStore,
  ): Promise<{ events: { seq: number; event: StreamEvent }[]; ended: StreamEvent | undefined }> {
    const { rows } = await this.#pool.query<{ seq: number; event: string }>(
      "SELECT seq, event FROM a2a_task_events WHERE task_id = $1 AND seq >= $2 ORDER BY seq",
      [taskId, next],
    );
    const events = rows.map((row) => ({ seq: row.seq, event: JSON.parse(row.event) as StreamEvent }));
    if (events.length > 0) return { events, ended: undefined };
    const stored = await store.get(taskId);
    return { events, ended: stored && TERMINAL_STATES.has(stored.task.status.state) ? stored.task : undefined };
  }

  #arm(taskId: string): { promise: Promise<void>; release(): void } {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    const set = this.#waiters.get(taskId) ?? new Set();
    set.add(resolve);
    this.#waiters.set(taskId, set);
    return {
      promise,
      release: () => {
        set.delete(resolve);
        if (set.size === 0) this.#waiters.delete(taskId);
      },
    };
  }

  async close(): Promise<void> {
    await this.#listener.close();
  }
}

/**
 * The bus's channels, named after a secret kept in a table of its schema. PostgreSQL lets any role LISTEN and
 * NOTIFY on any channel of a database; the deployments sharing one (each in a schema only its role can read) would
 * otherwise hear each other's task ids and could cancel each other's runs.
 */
async function channelsOf(pool: pg.Pool): Promise<Channels> {
  const secret = await inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1)", [BUS_LOCK]);
    await client.query("CREATE TABLE IF NOT EXISTS a2a_bus (id integer PRIMARY KEY CHECK (id = 1), secret text NOT NULL)");
    await client.query("INSERT INTO a2a_bus (id, secret) VALUES (1, $1) ON CONFLICT DO NOTHING", [randomBytes(16).toString("hex")]);
    return (await client.query<{ secret: string }>("SELECT secret FROM a2a_bus")).rows[0]!.secret;
  });
  return { events: `a2a_events_${secret}`, cancel: `a2a_cancel_${secret}` };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
