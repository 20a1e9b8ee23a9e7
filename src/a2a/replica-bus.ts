import type pg from "pg";
import { type StreamEvent, TERMINAL_STATES, type TaskStatus } from "../protocol/a2a.ts";
import type { Lease, TaskStore } from "./task-store.ts";

/** How long a follower waits for a notification before it reads anyway (a notification lost with a connection). */
const POLL_MS = 5_000;

/**
 * What replicas on one PostgreSQL database tell each other about running tasks, with no broker beside it: each
 * event of a run goes to a2a_task_events (LISTEN/NOTIFY wakes the followers), and a cancel is a notification the
 * replica running the task acts on. So tasks/get shows a task's live status, and tasks/resubscribe and
 * tasks/cancel work, from whichever replica a request reaches.
 */
export class ReplicaBus {
  readonly #pool: pg.Pool;
  readonly #listener: pg.PoolClient;
  readonly #waiters = new Map<string, Set<() => void>>();
  #onCancel: (taskId: string) => void = () => {};

  private constructor(pool: pg.Pool, listener: pg.PoolClient) {
    this.#pool = pool;
    this.#listener = listener;
  }

  static async open(pool: pg.Pool): Promise<ReplicaBus> {
    const listener = await pool.connect();
    const bus = new ReplicaBus(pool, listener);
    listener.on("notification", (message) => {
      const taskId = message.payload ?? "";
      if (message.channel === "a2a_cancel") bus.#onCancel(taskId);
      else for (const wake of bus.#waiters.get(taskId) ?? []) wake();
    });
    await listener.query("LISTEN a2a_events; LISTEN a2a_cancel");
    return bus;
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
       SELECT EXISTS (SELECT 1 FROM lease) AS held, CASE WHEN EXISTS (SELECT 1 FROM kept) THEN pg_notify('a2a_events', $1) END AS notified`,
      [lease.taskId, seq, JSON.stringify(event), now, lease.owner, lease.epoch],
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
    await this.#pool.query("SELECT pg_notify('a2a_cancel', $1)", [taskId]);
  }

  /** The status of the run's last event, if it has any. */
  async latestStatus(taskId: string): Promise<TaskStatus | undefined> {
    const { rows } = await this.#pool.query<{ event: string }>(
      "SELECT event FROM a2a_task_events WHERE task_id = $1 ORDER BY seq DESC LIMIT 1",
      [taskId],
    );
    const event = rows[0] && (JSON.parse(rows[0].event) as StreamEvent);
    return event && "status" in event ? (event.status as TaskStatus) : undefined;
  }

  /**
   * A run on another replica, event by event from its first, until its final status; when the run is gone without
   * one (its replica died, and the task was failed), the task as it ended.
   */
  async *follow(taskId: string, store: TaskStore): AsyncGenerator<StreamEvent> {
    for (let next = 0; ; ) {
      const wake = this.#arm(taskId);
      try {
        const { rows } = await this.#pool.query<{ seq: number; event: string }>(
          "SELECT seq, event FROM a2a_task_events WHERE task_id = $1 AND seq >= $2 ORDER BY seq",
          [taskId, next],
        );
        for (const row of rows) {
          const event = JSON.parse(row.event) as StreamEvent;
          next = row.seq + 1;
          yield event;
          if (event.kind === "status-update" && event.final) return;
        }
        if (rows.length === 0) {
          const stored = await store.get(taskId);
          if (stored && TERMINAL_STATES.has(stored.task.status.state)) {
            yield stored.task;
            return;
          }
          await Promise.race([wake.promise, new Promise((resolve) => setTimeout(resolve, POLL_MS).unref())]);
        }
      } finally {
        wake.release();
      }
    }
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
    await this.#listener.query("UNLISTEN *").catch(() => {});
    this.#listener.release();
  }
}
