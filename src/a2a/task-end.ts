import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { databaseUnavailable, reconnectDelayMs } from "../database-unavailable.ts";
import type { Task } from "../protocol/a2a.ts";
import type { Lease, TaskStore } from "./task-store.ts";

/** How long a run's end is tried again while the database is away, before the run gives up on storing it. */
const GIVE_UP_MS = 10 * 60_000;

/**
 * Stores a run's end (the task as it ended, and its run count for billing) although the database may be away just
 * then (a restart, a failover): tried again with backoff for up to 10 minutes. Without it the task would stay
 * running and its context busy. A connection lost during COMMIT may have committed: the task is read back before
 * each new try, so the run is counted once. False when the run's lease was lost (src/a2a/task-store.ts): nothing
 * was written.
 */
export async function storeTaskEnd(
  store: TaskStore,
  task: Task,
  lease: Lease,
  sessionId: string,
  options: { now: Clock; logger: Logger },
): Promise<boolean> {
  const { now, logger } = options;
  const started = now();
  for (let attempt = 1; ; attempt++) {
    try {
      if (attempt > 1 && (await stored(store, task))) return true;
      return await store.finish(task, lease, sessionId, now());
    } catch (err) {
      if (!databaseUnavailable(err) || now() - started > GIVE_UP_MS) throw err;
      logger.warn({ taskId: task.id, attempt, code: (err as { code?: string }).code }, "storing a task's end waits for the database");
      await new Promise((resolve) => setTimeout(resolve, reconnectDelayMs(attempt)));
    }
  }
}

/** Whether the store holds the task's end already (an earlier try committed, though its answer was lost). */
async function stored(store: TaskStore, task: Task): Promise<boolean> {
  const row = (await store.get(task.id))?.task.status;
  return row?.state === task.status.state && row.timestamp === task.status.timestamp;
}

/** What a failed run's task says: the database's loss is the user's to retry; any other cause is in the log. */
export const failureText = (err: unknown, taskId: string) =>
  databaseUnavailable(err)
    ? "The run failed: the agent server lost its database meanwhile; send the message again."
    : `The run failed (${(err as Error).name}); the agent server's log has the details for task ${taskId}.`;
