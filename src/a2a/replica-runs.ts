import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { RpcErrorCode, TERMINAL_STATES, type Message, type StreamEvent, type Task } from "../protocol/a2a.ts";
import { textParts } from "./messages.ts";
import { status } from "./task-context.ts";
import type { EventLog } from "./event-log.ts";
import type { ReplicaBus } from "./replica-bus.ts";
import { RpcError } from "./rpc-error.ts";
import { storeTaskEnd } from "./task-end.ts";
import type { Lease, TaskStore } from "./task-store.ts";

// The task runner's side of replicas on one database: what it publishes of its runs, how it ends them under their
// leases, and how it reaches a run another replica holds.

/** How long a cancel sent to another replica waits for the task to end. */
const CANCEL_WAIT_MS = 10_000;

/** A task whose run is on another replica: it has not ended nor is it waiting for input, and it is not running here. */
export function runningElsewhere(task: Task, here: boolean, bus: ReplicaBus | undefined): boolean {
  return bus !== undefined && !here && (task.status.state === "submitted" || task.status.state === "working");
}

/** A run on another replica followed: the task as it is now (its last status), and only the events after that. */
export async function followElsewhere(
  bus: ReplicaBus,
  store: TaskStore,
  task: Task,
): Promise<{ task: Task; events: AsyncIterable<StreamEvent> }> {
  const { next, status } = await bus.position(task.id);
  return { task: status ? { ...task, status } : task, events: bus.follow(task.id, store, next) };
}

/**
 * Each event of a run, published in order for the other replicas (from 0 again when a task resumes), under the
 * run's lease; `lost` is called when an event is refused: the task was taken over, the run should stop.
 */
export function publisher(bus: ReplicaBus, lease: Lease, logger: Logger, now: Clock, lost: () => void): (event: StreamEvent) => void {
  let seq = 0;
  let chain = bus.reset(lease);
  return (event) => {
    const n = seq++;
    chain = chain
      .then(async () => {
        if (!(await bus.publish(lease, n, event, now()))) lost();
      })
      .catch((err) => logger.warn({ err, taskId: lease.taskId }, "publishing a run's event to the other replicas failed"));
  };
}

/**
 * A run's end: its final task saved (and the run counted) while its lease holds, then its last events, the answer
 * and the final status. A stale run, whose task another replica failed while this one was silent past the replica
 * timeout, is discarded and logged; its subscribers here get the task as the takeover left it (failed).
 */
export async function endRun(
  run: { store: TaskStore; lease: Lease; events: EventLog<StreamEvent>; logger: Logger },
  task: Task,
  sessionId: string,
  now: Clock,
): Promise<Task> {
  const { store, lease, events, logger } = run;
  const { taskId, contextId } = lease;
  let ended = task;
  if (!(await storeTaskEnd(store, task, lease, sessionId, { now, logger }))) {
    logger.warn({ taskId, contextId, epoch: lease.epoch }, "a stale run's result is discarded: another replica took its task over");
    ended = (await store.get(taskId))?.task ?? task;
  } else if (task.artifacts?.[0]) {
    events.push({ kind: "artifact-update", taskId, contextId, artifact: task.artifacts[0], lastChunk: true });
  }
  events.push({ kind: "status-update", taskId, contextId, status: ended.status, final: true });
  return ended;
}

/**
 * A run whose end `endRun` could not store (`cause`: the database away past the give-up time, or a write it
 * refuses) ends failed rather than stay "submitted": the submitted task with a message saying so (the run's output
 * left out, it may be what was refused), stored in one try while the lease holds, and its subscribers get that final
 * status. Never throws: a task that cannot be stored either stays unfinished in the store until this server stops
 * (the next start, or another replica, fails it); the log says so.
 */
export async function endUnstored(
  run: { store: TaskStore; lease: Lease; events: EventLog<StreamEvent>; logger: Logger },
  submitted: Task,
  sessionId: string,
  now: Clock,
  cause: unknown,
): Promise<Task> {
  const { store, lease, events, logger } = run;
  const { taskId, contextId } = lease;
  logger.error({ err: cause, taskId, contextId }, "a task's end could not be stored; the task is failed");
  const message: Message = {
    kind: "message",
    role: "agent",
    messageId: randomUUID(),
    parts: textParts("The run ended, but the agent server could not store its result; send the message again."),
    contextId,
    taskId,
  };
  const at = now();
  let ended: Task = {
    ...submitted,
    status: status("failed", at, message),
    history: [...(submitted.history ?? []), message],
    artifacts: [],
  };
  try {
    if (!(await store.finish(ended, lease, sessionId, at))) ended = (await store.get(taskId))?.task ?? ended;
  } catch (err) {
    logger.error({ err, taskId, contextId }, "the failed task could not be stored either; it stays unfinished until this server stops");
  }
  events.push({ kind: "status-update", taskId, contextId, status: ended.status, final: true });
  return ended;
}

/** The runs (by task id) whose leases were found lost stop: each is aborted once, and logged. */
export function abortLost(runs: Map<string, { lease: Lease; abort: AbortController }>, leases: readonly Lease[], logger: Logger): void {
  for (const lease of leases) {
    const run = runs.get(lease.taskId);
    if (!run || run.lease.epoch !== lease.epoch || run.abort.signal.aborted) continue;
    logger.warn(
      { taskId: lease.taskId, contextId: lease.contextId, epoch: lease.epoch },
      "this replica lost a run's lease (another replica took its task over); the run is aborted",
    );
    run.abort.abort();
  }
}

/** Asks the replica running the task to stop it, and answers the task once it has ended (10 s at most). */
export async function cancelElsewhere(bus: ReplicaBus, store: TaskStore, taskId: string, task: Task): Promise<Task> {
  await bus.requestCancel(taskId);
  const deadline = Date.now() + CANCEL_WAIT_MS;
  for (let polls = 1; ; polls++) {
    // A notification is lost while the owner's LISTEN connection is down: asked again every second.
    if (polls % 10 === 0) await bus.requestCancel(taskId);
    const ended = (await store.get(taskId))!.task;
    if (ended.status.state === "canceled") return ended;
    if (TERMINAL_STATES.has(ended.status.state))
      throw new RpcError(RpcErrorCode.taskNotCancelable, `Task cannot be canceled: task ${taskId} is already ${ended.status.state}`);
    if (Date.now() > deadline)
      throw new RpcError(
        RpcErrorCode.internalError,
        `Internal error: the replica running task ${taskId} (${task.status.state}) did not stop it within ${CANCEL_WAIT_MS / 1000} s; try again`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
