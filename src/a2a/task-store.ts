import type { Task } from "../protocol/a2a.ts";
import type { TaskPage, TaskQuery } from "./task-list.ts";

export interface StoredTask {
  graphId: string;
  task: Task;
  /** The task's fencing token as read: taking it while it waits for input (`take`) names it. */
  epoch: number;
}

/**
 * The right to write one task while its run goes on: this process (`owner`) at the task's `epoch`, a fencing token
 * that only grows. Whoever fails the task of a silent owner (`failUnfinished`) bumps the epoch, so the silent one,
 * should it wake, writes nothing more of that task: not its events, not its end.
 */
export interface Lease {
  taskId: string;
  contextId: string;
  owner: string;
  epoch: number;
}

/** The leases of `leases` that no longer hold: the task's row names another owner or a later epoch. */
export function lostLeases(leases: readonly Lease[], held: readonly { id: string; owner: string | null; epoch: number }[]): Lease[] {
  return leases.filter((lease) => !held.some((row) => row.id === lease.taskId && row.owner === lease.owner && row.epoch === lease.epoch));
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
  /** An assistant's tasks, newest first, a page at a time (ListTasks). */
  list(query: TaskQuery): Promise<TaskPage>;
  /** Every task of a context, in the order they were created (a context's history). */
  contextTasks(contextId: string): Promise<Task[]>;
  /** A context (thread), if it exists: the graph it belongs to, and its task waiting for input, if any. */
  context(contextId: string): Promise<{ graphId: string; waitingTaskId: string | undefined } | undefined>;
  /** A new task, run here: its lease. Throws ContextBusyError while its context runs another task. */
  create(graphId: string, task: Task, now: number): Promise<Lease>;
  /**
   * A task waiting for input, as read at `epoch`, moves on: resumed here (`task` submitted; its lease, the epoch
   * bumped) or ended (canceled). Undefined, and nothing written, when it moved on meanwhile (another request took it).
   */
  take(task: Task, epoch: number, now: number): Promise<Lease | undefined>;
  /**
   * Saves a run's final task and counts the run toward its session's trace transaction, at once, while `lease`
   * holds. False, and nothing written nor counted, when the task was taken over (its run failed by another).
   */
  finish(task: Task, lease: Lease, sessionId: string, now: number): Promise<boolean>;
  /**
   * Tasks whose runs are gone end failed, each under a new epoch; returns how many. Gone: their owner has not
   * announced itself (`heartbeat`) for `staleMs`, or never did. One process (SQLite) never announces itself: at
   * start, every unfinished task is its last stop's.
   */
  failUnfinished(reason: (task: Task) => Task, now: number): Promise<number>;
  /** This process is alive. */
  heartbeat(now: number): Promise<void>;
  /** Which of `leases` no longer hold: their tasks were taken over. */
  lost(leases: readonly Lease[]): Promise<Lease[]>;
  /**
   * The counts of intervals that ended by `now`, each with its transaction id. An id is given once, when its
   * interval closes, and kept until the sidecar has the transaction: a resend carries the same id and the
   * sidecar counts it once. `closeCurrent` closes the running interval too (a stopping server).
   */
  closedCounts(now: number, closeCurrent?: boolean): Promise<RunCount[]>;
  reported(transactionIds: readonly string[]): Promise<void>;
  close(): Promise<void>;
}
