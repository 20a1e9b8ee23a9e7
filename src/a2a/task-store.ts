import { randomUUID } from "node:crypto";
import Database from "better-sqlite3";
import type { Task } from "../protocol/a2a.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS contexts (id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, created_at INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS tasks (
  id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, context_id TEXT NOT NULL REFERENCES contexts(id),
  state TEXT NOT NULL, task TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS tasks_by_context ON tasks(context_id);
CREATE TABLE IF NOT EXISTS run_counts (
  session_id TEXT NOT NULL, interval_start INTEGER NOT NULL, runs INTEGER NOT NULL,
  first_at INTEGER NOT NULL, last_at INTEGER NOT NULL, transaction_id TEXT
) STRICT;
-- Runs count into the open row of their interval; a closed row (with its transaction id) is never changed again.
CREATE UNIQUE INDEX IF NOT EXISTS open_run_counts ON run_counts(session_id, interval_start) WHERE transaction_id IS NULL;
`;

export interface StoredTask {
  graphId: string;
  task: Task;
}

/** A context already runs a task (on another replica: the database refused a second run in it). */
export class ContextBusyError extends Error {
  readonly contextId: string;
  constructor(contextId: string) {
    super(`context ${contextId} is already running a task`);
    this.name = "ContextBusyError";
    this.contextId = contextId;
  }
}

/** Runs of one billing session in one closed interval: what one trace transaction reports. */
export interface RunCount {
  transactionId: string;
  sessionId: string;
  intervalStart: number;
  intervalEnd: number;
  runs: number;
  firstAt: number;
  lastAt: number;
}

/**
 * Where the agent server keeps A2A tasks (which assistant and context each belongs to, its last state) and the runs
 * not yet reported to the sidecar, counted per billing session and interval. A run's end and its count are one
 * transaction: a crash never loses a counted run nor counts one twice. SQLite (`tasks.db`, the default) or
 * PostgreSQL (`DATABASE_URI`, task-store-postgres.ts); both pass test/a2a/task-store.test.ts.
 */
export interface TaskStore {
  get(taskId: string): Promise<StoredTask | undefined>;
  /** A context (thread), if it exists: the graph it belongs to, and its task waiting for input, if any. */
  context(contextId: string): Promise<{ graphId: string; waitingTaskId: string | undefined } | undefined>;
  create(graphId: string, task: Task, now: number): Promise<void>;
  update(task: Task, now: number): Promise<void>;
  /** Saves a run's final task and counts the run toward its session's trace transaction, at once. */
  finish(task: Task, sessionId: string, now: number): Promise<void>;
  /**
   * Tasks whose runs are gone end failed; returns how many. One process (SQLite): every unfinished task, at start.
   * Replicas (PostgreSQL): those of replicas that stopped announcing themselves (`heartbeat`) for `staleMs`.
   */
  failUnfinished(reason: (task: Task) => Task, now: number): Promise<number>;
  /** This process is alive (replicas only; a no-op for one process). */
  heartbeat(now: number): Promise<void>;
  /**
   * The counts of intervals that ended by `now`, each with its transaction id. An id is given once, when its
   * interval closes, and kept until the sidecar has the transaction: a resend carries the same id and the
   * sidecar counts it once. `closeCurrent` closes the running interval too (a stopping server).
   */
  closedCounts(now: number, closeCurrent?: boolean): Promise<RunCount[]>;
  reported(transactionIds: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

/** The agent server's own SQLite file, `tasks.db` in its data dir. */
export class SqliteTaskStore implements TaskStore {
  readonly #db: Database.Database;
  readonly #intervalMs: number;
  readonly #statements;

  constructor(path: string, intervalMs: number) {
    this.#db = new Database(path);
    this.#db.pragma("journal_mode = WAL");
    this.#db.pragma("synchronous = FULL");
    this.#db.pragma("busy_timeout = 5000");
    this.#db.exec(SCHEMA);
    this.#intervalMs = intervalMs;
    const db = this.#db;
    this.#statements = {
      task: db.prepare<[string], { graph_id: string; task: string }>("SELECT graph_id, task FROM tasks WHERE id = ?"),
      context: db.prepare<[string], { graph_id: string; waiting: string | null }>(
        `SELECT graph_id, (SELECT id FROM tasks WHERE context_id = contexts.id AND state = 'input-required' LIMIT 1) AS waiting
         FROM contexts WHERE id = ?`,
      ),
      addContext: db.prepare("INSERT OR IGNORE INTO contexts (id, graph_id, created_at) VALUES (?, ?, ?)"),
      addTask: db.prepare("INSERT INTO tasks (id, graph_id, context_id, state, task, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"),
      setTask: db.prepare("UPDATE tasks SET state = ?, task = ?, updated_at = ? WHERE id = ?"),
      unfinished: db.prepare<[], { id: string; task: string }>("SELECT id, task FROM tasks WHERE state IN ('submitted', 'working')"),
      countRun: db.prepare(
        `INSERT INTO run_counts (session_id, interval_start, runs, first_at, last_at) VALUES (?, ?, 1, ?, ?)
         ON CONFLICT (session_id, interval_start) WHERE transaction_id IS NULL DO UPDATE SET runs = runs + 1, last_at = excluded.last_at`,
      ),
      close: db.prepare("UPDATE run_counts SET transaction_id = ? WHERE session_id = ? AND interval_start = ? AND transaction_id IS NULL"),
      open: db.prepare<[number], { session_id: string; interval_start: number }>(
        "SELECT session_id, interval_start FROM run_counts WHERE transaction_id IS NULL AND interval_start < ?",
      ),
      closed: db.prepare<
        [],
        { transaction_id: string; session_id: string; interval_start: number; runs: number; first_at: number; last_at: number }
      >(
        "SELECT transaction_id, session_id, interval_start, runs, first_at, last_at FROM run_counts WHERE transaction_id IS NOT NULL ORDER BY interval_start",
      ),
      reported: db.prepare("DELETE FROM run_counts WHERE transaction_id = ?"),
    };
  }

  async get(taskId: string): Promise<StoredTask | undefined> {
    const row = this.#statements.task.get(taskId);
    return row && { graphId: row.graph_id, task: JSON.parse(row.task) as Task };
  }

  async context(contextId: string): Promise<{ graphId: string; waitingTaskId: string | undefined } | undefined> {
    const row = this.#statements.context.get(contextId);
    return row && { graphId: row.graph_id, waitingTaskId: row.waiting ?? undefined };
  }

  async create(graphId: string, task: Task, now: number): Promise<void> {
    this.#db.transaction(() => {
      this.#statements.addContext.run(task.contextId, graphId, now);
      this.#statements.addTask.run(task.id, graphId, task.contextId, task.status.state, JSON.stringify(task), now, now);
    })();
  }

  async update(task: Task, now: number): Promise<void> {
    this.#statements.setTask.run(task.status.state, JSON.stringify(task), now, task.id);
  }

  async finish(task: Task, sessionId: string, now: number): Promise<void> {
    this.#db.transaction(() => {
      this.#statements.setTask.run(task.status.state, JSON.stringify(task), now, task.id);
      this.#statements.countRun.run(sessionId, now - (now % this.#intervalMs), now, now);
    })();
  }

  /** One process: every unfinished task is its own last stop's. */
  async failUnfinished(reason: (task: Task) => Task, now: number): Promise<number> {
    const rows = this.#statements.unfinished.all();
    this.#db.transaction(() => {
      for (const row of rows) {
        const task = reason(JSON.parse(row.task) as Task);
        this.#statements.setTask.run(task.status.state, JSON.stringify(task), now, task.id);
      }
    })();
    return rows.length;
  }

  /** One process has no other replica to tell. */
  async heartbeat(): Promise<void> {}

  async closedCounts(now: number, closeCurrent = false): Promise<RunCount[]> {
    const current = closeCurrent ? Number.MAX_SAFE_INTEGER : now - (now % this.#intervalMs);
    this.#db.transaction(() => {
      for (const row of this.#statements.open.all(current)) this.#statements.close.run(randomUUID(), row.session_id, row.interval_start);
    })();
    return this.#statements.closed.all().map((row) => ({
      transactionId: row.transaction_id,
      sessionId: row.session_id,
      intervalStart: row.interval_start,
      intervalEnd: row.interval_start + this.#intervalMs,
      runs: row.runs,
      firstAt: row.first_at,
      lastAt: row.last_at,
    }));
  }

  async reported(transactionIds: readonly string[]): Promise<void> {
    this.#db.transaction(() => {
      for (const id of transactionIds) this.#statements.reported.run(id);
    })();
  }

  async close(): Promise<void> {
    this.#db.close();
  }
}
