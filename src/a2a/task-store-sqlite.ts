import { randomUUID } from "node:crypto";
import Database from "better-sqlite3";
import type { Task } from "../protocol/a2a.ts";
import { sqliteFilter, type TaskPage, type TaskQuery } from "./task-list.ts";
import { ContextBusyError, type Lease, lostLeases, type RunCount, type StoredTask, type TaskStore } from "./task-store.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS contexts (id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, created_at INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS tasks (
  id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, context_id TEXT NOT NULL REFERENCES contexts(id),
  state TEXT NOT NULL, task TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS tasks_by_context ON tasks(context_id);
-- ListTasks: an assistant's tasks, or a context's, newest first; a context's history in order.
CREATE INDEX IF NOT EXISTS tasks_by_graph_created ON tasks(graph_id, created_at, id);
CREATE INDEX IF NOT EXISTS tasks_by_context_created ON tasks(context_id, created_at, id);
-- When each process running tasks on this file last said it was alive (heartbeat): as a2a_replicas on PostgreSQL.
CREATE TABLE IF NOT EXISTS replicas (id TEXT PRIMARY KEY, seen_at INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS run_counts (
  session_id TEXT NOT NULL, interval_start INTEGER NOT NULL, runs INTEGER NOT NULL,
  first_at INTEGER NOT NULL, last_at INTEGER NOT NULL, transaction_id TEXT
) STRICT;
-- Runs count into the open row of their interval; a closed row (with its transaction id) is never changed again.
CREATE UNIQUE INDEX IF NOT EXISTS open_run_counts ON run_counts(session_id, interval_start) WHERE transaction_id IS NULL;
`;

/** tasks.db made by an earlier version gets the lease's columns (SQLite has no ADD COLUMN IF NOT EXISTS). */
function migrate(db: Database.Database): void {
  db.transaction(() => {
    const columns = new Set(
      db
        .prepare<[], { name: string }>("SELECT name FROM pragma_table_info('tasks')")
        .all()
        .map((c) => c.name),
    );
    if (!columns.has("owner")) db.exec("ALTER TABLE tasks ADD COLUMN owner TEXT");
    if (!columns.has("epoch")) db.exec("ALTER TABLE tasks ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0");
    // A context runs one task at a time, also across a takeover: as a2a_one_run_per_context on PostgreSQL.
    db.exec("CREATE UNIQUE INDEX IF NOT EXISTS one_run_per_context ON tasks(context_id) WHERE state IN ('submitted', 'working')");
  }).immediate();
}

/** The agent server's own SQLite file, `tasks.db` in its data dir. */
export class SqliteTaskStore implements TaskStore {
  readonly #db: Database.Database;
  readonly #intervalMs: number;
  readonly #staleMs: number;
  readonly #statements;
  /** This process: the owner of the tasks it runs. */
  readonly replicaId = randomUUID();

  constructor(path: string, intervalMs: number, staleMs = 30_000) {
    this.#db = new Database(path);
    try {
      this.#db.pragma("journal_mode = WAL");
      this.#db.pragma("synchronous = FULL");
      this.#db.pragma("busy_timeout = 5000");
      this.#db.exec(SCHEMA);
      migrate(this.#db);
    } catch (err) {
      this.#db.close(); // a file it refuses (damaged, another schema) is not left open
      throw err;
    }
    this.#intervalMs = intervalMs;
    this.#staleMs = staleMs;
    const db = this.#db;
    this.#statements = {
      task: db.prepare<[string], { graph_id: string; task: string; epoch: number }>("SELECT graph_id, task, epoch FROM tasks WHERE id = ?"),
      contextTasks: db.prepare<[string], { task: string }>(
        "SELECT task FROM tasks WHERE context_id = ? ORDER BY created_at, updated_at, id",
      ),
      context: db.prepare<[string], { graph_id: string; waiting: string | null }>(
        `SELECT graph_id, (SELECT id FROM tasks WHERE context_id = contexts.id AND state = 'input-required' LIMIT 1) AS waiting
         FROM contexts WHERE id = ?`,
      ),
      addContext: db.prepare("INSERT OR IGNORE INTO contexts (id, graph_id, created_at) VALUES (?, ?, ?)"),
      addTask: db.prepare(
        "INSERT INTO tasks (id, graph_id, context_id, state, task, created_at, updated_at, owner, epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)",
      ),
      take: db.prepare<[string, string, number, string, string, number], { epoch: number }>(
        "UPDATE tasks SET state = ?, task = ?, updated_at = ?, owner = ?, epoch = epoch + 1 WHERE id = ? AND epoch = ? AND state = 'input-required' RETURNING epoch",
      ),
      finishTask: db.prepare(
        "UPDATE tasks SET state = ?, task = ?, updated_at = ? WHERE id = ? AND owner = ? AND epoch = ? AND state IN ('submitted', 'working')",
      ),
      failTask: db.prepare("UPDATE tasks SET state = ?, task = ?, updated_at = ?, owner = ?, epoch = epoch + 1 WHERE id = ?"),
      unfinished: db.prepare<[number], { task: string }>(
        `SELECT t.task FROM tasks t LEFT JOIN replicas r ON r.id = t.owner
          WHERE t.state IN ('submitted', 'working') AND (r.id IS NULL OR r.seen_at < ?)`,
      ),
      announce: db.prepare("INSERT INTO replicas (id, seen_at) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at"),
      leave: db.prepare("DELETE FROM replicas WHERE id = ?"),
      lease: db.prepare<[string], { id: string; owner: string | null; epoch: number }>("SELECT id, owner, epoch FROM tasks WHERE id = ?"),
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
    return row && { graphId: row.graph_id, task: JSON.parse(row.task) as Task, epoch: row.epoch };
  }

  async list(query: TaskQuery): Promise<TaskPage> {
    const { where, params } = sqliteFilter(query);
    const cursor = query.after ? " AND (created_at < ? OR (created_at = ? AND id < ?))" : "";
    const after = query.after ? [query.after.createdAt, query.after.createdAt, query.after.id] : [];
    const rows = this.#db
      .prepare<unknown[], { task: string; created_at: number }>(
        `SELECT task, created_at FROM tasks WHERE ${where}${cursor} ORDER BY created_at DESC, id DESC LIMIT ?`,
      )
      .all(...params, ...after, query.limit);
    const total = this.#db.prepare<unknown[], { n: number }>(`SELECT count(*) AS n FROM tasks WHERE ${where}`).get(...params)!.n;
    return { tasks: rows.map((row) => ({ task: JSON.parse(row.task) as Task, createdAt: row.created_at })), total };
  }

  async contextTasks(contextId: string): Promise<Task[]> {
    return this.#statements.contextTasks.all(contextId).map((row) => JSON.parse(row.task) as Task);
  }

  async context(contextId: string): Promise<{ graphId: string; waitingTaskId: string | undefined } | undefined> {
    const row = this.#statements.context.get(contextId);
    return row && { graphId: row.graph_id, waitingTaskId: row.waiting ?? undefined };
  }

  async create(graphId: string, task: Task, now: number): Promise<Lease> {
    busyAsContext(task.contextId, () =>
      this.#db.transaction(() => {
        this.#statements.addContext.run(task.contextId, graphId, now);
        this.#statements.addTask.run(task.id, graphId, task.contextId, task.status.state, JSON.stringify(task), now, now, this.replicaId);
      })(),
    );
    return { taskId: task.id, contextId: task.contextId, owner: this.replicaId, epoch: 1 };
  }

  async take(task: Task, epoch: number, now: number): Promise<Lease | undefined> {
    const row = busyAsContext(task.contextId, () =>
      this.#statements.take.get(task.status.state, JSON.stringify(task), now, this.replicaId, task.id, epoch),
    );
    return row && { taskId: task.id, contextId: task.contextId, owner: this.replicaId, epoch: row.epoch };
  }

  async finish(task: Task, lease: Lease, sessionId: string, now: number): Promise<boolean> {
    return this.#db.transaction(() => {
      const written = this.#statements.finishTask.run(task.status.state, JSON.stringify(task), now, task.id, lease.owner, lease.epoch);
      if (written.changes === 0) return false;
      this.#statements.countRun.run(sessionId, now - (now % this.#intervalMs), now, now);
      return true;
    })();
  }

  async failUnfinished(reason: (task: Task) => Task, now: number): Promise<number> {
    return this.#db
      .transaction(() => {
        const rows = this.#statements.unfinished.all(now - this.#staleMs);
        for (const row of rows) {
          const task = reason(JSON.parse(row.task) as Task);
          this.#statements.failTask.run(task.status.state, JSON.stringify(task), now, this.replicaId, task.id);
        }
        return rows.length;
      })
      .immediate();
  }

  async heartbeat(now: number): Promise<void> {
    this.#statements.announce.run(this.replicaId, now);
  }

  async lost(leases: readonly Lease[]): Promise<Lease[]> {
    return lostLeases(
      leases,
      leases.map((lease) => this.#statements.lease.get(lease.taskId)).filter((row) => row !== undefined),
    );
  }

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
    this.#statements.leave.run(this.replicaId);
    this.#db.close();
  }
}

/** The one-run-per-context index refusing a row: that context is busy (a run here, or a replica's not yet failed). */
function busyAsContext<T>(contextId: string, write: () => T): T {
  try {
    return write();
  } catch (err) {
    if ((err as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE" && /tasks\.context_id/.test((err as Error).message))
      throw new ContextBusyError(contextId);
    throw err;
  }
}
