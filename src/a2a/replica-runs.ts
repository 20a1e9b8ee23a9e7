import type { Logger } from "pino";
import { RpcErrorCode, TERMINAL_STATES, type StreamEvent, type Task } from "../protocol/a2a.ts";
import type { ReplicaBus } from "./replica-bus.ts";
import { RpcError } from "./rpc-error.ts";
import type { TaskStore } from "./task-store.ts";

// The task runner's side of replicas on one database: what it publishes of its runs, and how it reaches a run
// another replica holds.

/** How long a cancel sent to another replica waits for the task to end. */
const CANCEL_WAIT_MS = 10_000;

/** A task whose run is on another replica: it has not ended nor is it waiting for input, and it is not running here. */
export function runningElsewhere(task: Task, here: boolean, bus: ReplicaBus | undefined): boolean {
  return bus !== undefined && !here && (task.status.state === "submitted" || task.status.state === "working");
}

/** Each event of a run, published in order for the other replicas (from 0 again when a task resumes). */
export function publisher(bus: ReplicaBus, taskId: string, logger: Logger, now: () => number): (event: StreamEvent) => void {
  let seq = 0;
  let chain = bus.reset(taskId);
  return (event) => {
    const n = seq++;
    chain = chain
      .then(() => bus.publish(taskId, n, event, now()))
      .catch((err) => logger.warn({ err, taskId }, "publishing a run's event to the other replicas failed"));
  };
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
