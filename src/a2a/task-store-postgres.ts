import { randomUUID } from "node:crypto";
import type pg from "pg";
import { inTransaction } from "../pg-transaction.ts";
import type { Task } from "../protocol/a2a.ts";
import { ContextBusyError, type Lease, lostLeases, type RunCount, type StoredTask, type TaskStore } from "./task-store.ts";
import type { TaskPage, TaskQuery } from "./task-list.ts";

// The task store in PostgreSQL (DATABASE_URI), beside the LangGraph checkpointer's tables: the same tables as
// tasks.db, prefixed a2a_. Created by the agent server itself, one replica at a time (an advisory lock).

const MIGRATION_LOCK = 0x6132_6173; // "a2as"
const SCHEMA = `
CREATE TABLE IF NOT EXISTS a2a_contexts (id text PRIMARY KEY, graph_id text NOT NULL, created_at bigint NOT NULL);
CREATE TABLE IF NOT EXISTS a2a_tasks (
  id text PRIMARY KEY, graph_id text NOT NULL, context_id text NOT NULL REFERENCES a2a_contexts(id),
  state text NOT NULL, task text NOT NULL, created_at bigint NOT NULL, updated_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_tasks_by_context ON a2a_tasks (context_id);
-- ListTasks: an assistant's tasks, or a context's, newest first; a context's history in order.
CREATE INDEX IF NOT EXISTS a2a_tasks_by_graph_created ON a2a_tasks (graph_id, created_at, id);
CREATE INDEX IF NOT EXISTS a2a_tasks_by_context_created ON a2a_tasks (context_id, created_at, id);
CREATE TABLE IF NOT EXISTS a2a_run_counts (
  session_id text NOT NULL, interval_start bigint NOT NULL, runs bigint NOT NULL,
  first_at bigint NOT NULL, last_at bigint NOT NULL, transaction_id uuid
);
-- Which replica runs a task, and when each replica last said it was alive: a dead one's tasks are failed by the others.
ALTER TABLE a2a_tasks ADD COLUMN IF NOT EXISTS owner text;
-- The owner's lease: its fencing token, bumped when another replica fails the task (task-store.ts, Lease).
ALTER TABLE a2a_tasks ADD COLUMN IF NOT EXISTS epoch integer NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS a2a_replicas (id text PRIMARY KEY, seen_at bigint NOT NULL);
-- A context runs one task at a time, whichever replica runs it (a task's row stays submitted until its run ends).
CREATE UNIQUE INDEX IF NOT EXISTS a2a_one_run_per_context ON a2a_tasks (context_id) WHERE state IN ('submitted', 'working');
-- The events of runs, for replicas following a run another one holds (replica-bus.ts); kept an hour.
CREATE TABLE IF NOT EXISTS a2a_task_events (
  task_id text NOT NULL, seq integer NOT NULL, event text NOT NULL, created_at bigint NOT NULL, PRIMARY KEY (task_id, seq)
);
-- Runs count into the open row of their interval; a closed row (with its transaction id) is never changed again.
CREATE UNIQUE INDEX IF NOT EXISTS a2a_open_run_counts ON a2a_run_counts (session_id, interval_start) WHERE transaction_id IS NULL;
`;

export class PostgresTaskStore implements TaskStore {
  readonly #pool: pg.Pool;
  readonly #intervalMs: number;
  /** This process among the replicas: the owner of the tasks it runs. */
  readonly replicaId = randomUUID();
  readonly #staleMs: number;

  private constructor(pool: pg.Pool, intervalMs: number, staleMs: number) {
    this.#pool = pool;
    this.#intervalMs = intervalMs;
    this.#staleMs = staleMs;
  }

  /**
   * The store on `pool` (which the caller closes), its tables created when missing. A replica not heard of for
   * `staleMs` is taken for dead: its unfinished tasks are failed (failUnfinished).
   */
  static async open(pool: pg.Pool, intervalMs: number, staleMs = 30_000): Promise<PostgresTaskStore> {
    const store = new PostgresTaskStore(pool, intervalMs, staleMs);
    await store.#transaction(async (client) => {
      await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
      await client.query(SCHEMA);
    });
    return store;
  }

  #transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.#pool, work);
  }

  async get(taskId: string): Promise<StoredTask | undefined> {
    const { rows } = await this.#pool.query<{ graph_id: string; task: string; epoch: number }>(
      "SELECT graph_id, task, epoch FROM a2a_tasks WHERE id = $1",
      [taskId],
    );
    const row = rows[0];
    return row && { graphId: row.graph_id, task: JSON.parse(row.task) as Task, epoch: row.epoch };
  }

  async list(query: TaskQuery): Promise<TaskPage> {
    const params: unknown[] = [query.graphId, query.contextId ?? null, query.states ?? null];
    const where = "graph_id = $1 AND ($2::text IS NULL OR context_id = $2) AND ($3::text[] IS NULL OR state = ANY($3::text[]))";
    const total = await this.#pool.query<{ n: string }>(`SELECT count(*) AS n FROM a2a_tasks WHERE ${where}`, params);
    const after = query.after ? " AND (created_at, id) < ($5, $6)" : "";
    const { rows } = await this.#pool.query<{ task: string; created_at: string }>(
      `SELECT task, created_at FROM a2a_tasks WHERE ${where}${after} ORDER BY created_at DESC, id DESC LIMIT $4`,
      [...params, query.limit, ...(query.after ? [query.after.createdAt, query.after.id] : [])],
    );
    return {
      tasks: rows.map((row) => ({ task: JSON.parse(row.task) as Task, createdAt: Number(row.created_at) })),
      total: Number(total.rows[0]!.n),
    };
  }

  async contextTasks(contextId: string): Promise<Task[]> {
    const { rows } = await this.#pool.query<{ task: string }>(
      "SELECT task FROM a2a_tasks WHERE context_id = $1 ORDER BY created_at, updated_at, id",
      [contextId],
    );
    return rows.map((row) => JSON.parse(row.task) as Task);
  }

  async context(contextId: string): Promise<{ graphId: string; waitingTaskId: string | undefined } | undefined> {
    const { rows } = await this.#pool.query<{ graph_id: string; waiting: string | null }>(
      `SELECT graph_id, (SELECT id FROM a2a_tasks WHERE context_id = a2a_contexts.id AND state = 'input-required' LIMIT 1) AS waiting
       FROM a2a_contexts WHERE id = $1`,
      [contextId],
    );
    const row = rows[0];
    return row && { graphId: row.graph_id, waitingTaskId: row.waiting ?? undefined };
  }

  async create(graphId: string, task: Task, now: number): Promise<Lease> {
    await busyAsContext(task.contextId, () => this.#insert(graphId, task, now));
    return { taskId: task.id, contextId: task.contextId, owner: this.replicaId, epoch: 1 };
  }

  async #insert(graphId: string, task: Task, now: number): Promise<void> {
    await this.#transaction(async (client) => {
      await client.query("INSERT INTO a2a_contexts (id, graph_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", [
        task.contextId,
        graphId,
        now,
      ]);
      await client.query(
        "INSERT INTO a2a_tasks (id, graph_id, context_id, state, task, created_at, updated_at, owner, epoch) VALUES ($1, $2, $3, $4, $5, $6, $6, $7, 1)",
        [task.id, graphId, task.contextId, task.status.state, JSON.stringify(task), now, this.replicaId],
      );
    });
  }

  /** A task taken (a graph's question answered, or the task canceled) is this replica's now, under a new epoch. */
  async take(task: Task, epoch: number, now: number): Promise<Lease | undefined> {
    const { rows } = await busyAsContext(task.contextId, () =>
      this.#pool.query<{ epoch: number }>(
        `UPDATE a2a_tasks SET state = $1, task = $2, updated_at = $3, owner = $4, epoch = epoch + 1
          WHERE id = $5 AND epoch = $6 AND state = 'input-required' RETURNING epoch`,
        [task.status.state, JSON.stringify(task), now, this.replicaId, task.id, epoch],
      ),
    );
    return rows[0] && { taskId: task.id, contextId: task.contextId, owner: this.replicaId, epoch: rows[0].epoch };
  }

  /** This replica is alive; and the runs' events older than an hour go (followers read them within seconds). */
  async heartbeat(now: number): Promise<void> {
    await this.#pool.query(
      "INSERT INTO a2a_replicas (id, seen_at) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at",
      [this.replicaId, now],
    );
    await this.#pool.query("DELETE FROM a2a_task_events WHERE created_at < $1", [now - 3_600_000]);
  }

  async lost(leases: readonly Lease[]): Promise<Lease[]> {
    const { rows } = await this.#pool.query<{ id: string; owner: string | null; epoch: number }>(
      "SELECT id, owner, epoch FROM a2a_tasks WHERE id = ANY($1::text[])",
      [leases.map((lease) => lease.taskId)],
    );
    return lostLeases(leases, rows);
  }

  async finish(task: Task, lease: Lease, sessionId: string, now: number): Promise<boolean> {
    return this.#transaction(async (client) => {
      const written = await client.query(
        `UPDATE a2a_tasks SET state = $1, task = $2, updated_at = $3
          WHERE id = $4 AND owner = $5 AND epoch = $6 AND state IN ('submitted', 'working')`,
        [task.status.state, JSON.stringify(task), now, task.id, lease.owner, lease.epoch],
      );
      if (written.rowCount === 0) return false;
      await client.query(
        `INSERT INTO a2a_run_counts (session_id, interval_start, runs, first_at, last_at) VALUES ($1, $2, 1, $3, $3)
         ON CONFLICT (session_id, interval_start) WHERE transaction_id IS NULL
         DO UPDATE SET runs = a2a_run_counts.runs + 1, last_at = excluded.last_at`,
        [sessionId, now - (now % this.#intervalMs), now],
      );
      return true;
    });
  }

  async failUnfinished(reason: (task: Task) => Task, now: number): Promise<number> {
    return this.#transaction(async (client) => {
      // Unfinished tasks whose replica is gone: never announced, or silent for staleMs. SKIP LOCKED: two replicas
      // sweeping at once each take other rows, neither waits. Taken over: this replica's, under a new epoch, so
      // the silent one, should it only have stalled, writes nothing more of them.
      const { rows } = await client.query<{ task: string }>(
        `SELECT t.task FROM a2a_tasks t LEFT JOIN a2a_replicas r ON r.id = t.owner
          WHERE t.state IN ('submitted', 'working') AND (r.id IS NULL OR r.seen_at < $1)
          FOR UPDATE OF t SKIP LOCKED`,
        [now - this.#staleMs],
      );
      for (const row of rows) {
        const task = reason(JSON.parse(row.task) as Task);
        await client.query("UPDATE a2a_tasks SET state = $1, task = $2, updated_at = $3, owner = $4, epoch = epoch + 1 WHERE id = $5", [
          task.status.state,
          JSON.stringify(task),
          now,
          this.replicaId,
          task.id,
        ]);
      }
      return rows.length;
    });
  }

  async closedCounts(now: number, closeCurrent = false): Promise<RunCount[]> {
    const current = closeCurrent ? Number.MAX_SAFE_INTEGER : now - (now % this.#intervalMs);
    await this.#pool.query(
      "UPDATE a2a_run_counts SET transaction_id = gen_random_uuid() WHERE transaction_id IS NULL AND interval_start < $1",
      [current],
    );
    const { rows } = await this.#pool.query<{
      transaction_id: string;
      session_id: string;
      interval_start: string;
      runs: string;
      first_at: string;
      last_at: string;
    }>(
      "SELECT transaction_id, session_id, interval_start, runs, first_at, last_at FROM a2a_run_counts WHERE transaction_id IS NOT NULL ORDER BY interval_start",
    );
    // bigint columns come as text: exact, then numbers (milliseconds and counts, far below 2^53).
    return rows.map((row) => ({
      transactionId: row.transaction_id,
      sessionId: row.session_id,
      intervalStart: Number(row.interval_start),
      intervalEnd: Number(row.interval_start) + this.#intervalMs,
      runs: Number(row.runs),
      firstAt: Number(row.first_at),
      lastAt: Number(row.last_at),
    }));
  }

  async reported(transactionIds: readonly string[]): Promise<void> {
    await this.#pool.query("DELETE FROM a2a_run_counts WHERE transaction_id = ANY($1::uuid[])", [transactionIds]);
  }

  /** A clean stop: this replica's runs have ended, it leaves the list. The pool is the caller's (the checkpointer shares it). */
  async close(): Promise<void> {
    await this.#pool.query("DELETE FROM a2a_replicas WHERE id = $1", [this.replicaId]).catch(() => {});
  }
}

/** The one-run-per-context index refusing a row: that context is busy on another replica. */
async function busyAsContext<T>(contextId: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    const { code, constraint } = err as { code?: string; constraint?: string };
    if (code === "23505" && constraint === "a2a_one_run_per_context") throw new ContextBusyError(contextId);
    throw err;
  }
}
