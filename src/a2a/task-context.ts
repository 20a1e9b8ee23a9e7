import { randomUUID } from "node:crypto";
import { Uuid } from "../protocol/common.ts";
import { RpcErrorCode, TERMINAL_STATES, type Message, type TaskState } from "../protocol/a2a.ts";
import type { Assistant } from "./graph-config.ts";
import { invalidParams, RpcError, TaskEndedError, taskNotFound } from "./rpc-error.ts";
import type { StoredTask, TaskStore } from "./task-store.ts";

/**
 * What a message naming a task that ended gets: "new-task" (v0.3 method names) opens a new task in that task's
 * context, as the platform's documented client expects (it sends the taskId of every previous answer); "refuse"
 * (v1.0 names) answers -32004, as A2A v1.0 says.
 */
export type EndedTaskPolicy = "new-task" | "refuse";

/**
 * The context a message continues, checked: a given taskId must be this assistant's and in the given context; one
 * waiting for input (the graph interrupted) is resumed by the message. A task that ended is never reopened: per
 * `ended`, the message starts a new task in its context, or is refused. A context waiting for input takes only a
 * reply naming its task.
 */
export async function contextFor(
  store: TaskStore,
  assistant: Assistant,
  message: Message,
  runningHere: (taskId: string) => boolean,
  ended: EndedTaskPolicy,
): Promise<{ contextId: string; resume?: StoredTask }> {
  if (message.contextId !== undefined && !Uuid.safeParse(message.contextId).success) {
    throw invalidParams(`message.contextId must be a UUID (it is the conversation's thread id)`, [
      { loc: ["params", "message", "contextId"], msg: "must be a UUID", type: "uuid" },
    ]);
  }
  if (message.taskId !== undefined) {
    const stored = await store.get(message.taskId);
    if (!stored || stored.graphId !== assistant.graphId || (message.contextId !== undefined && stored.task.contextId !== message.contextId))
      throw taskNotFound(message.taskId);
    const { state } = stored.task.status;
    if (TERMINAL_STATES.has(state)) {
      if (ended === "refuse") throw new TaskEndedError(message.taskId, state);
      // As a message with the contextId alone: a new task in the conversation, unless a task there waits for input.
      return continued(store, assistant, stored.task.contextId, message.taskId);
    }
    if (state !== "input-required" || runningHere(stored.task.id)) return { contextId: stored.task.contextId };
    return { contextId: stored.task.contextId, resume: stored };
  }
  if (message.contextId === undefined) return { contextId: randomUUID() };
  return continued(store, assistant, message.contextId);
}

/** A new task in `contextId` (a new context when unknown): refused while a task there waits for input. */
async function continued(store: TaskStore, assistant: Assistant, contextId: string, endedTaskId?: string): Promise<{ contextId: string }> {
  const context = await store.context(contextId);
  if (context && context.graphId !== assistant.graphId) throw invalidParams(`context ${contextId} belongs to another assistant`);
  const waiting = context?.waitingTaskId;
  if (waiting !== undefined && endedTaskId !== undefined) {
    throw invalidParams(
      `message.taskId must name task ${waiting}: context ${contextId} waits for its answer (input-required), and task ${endedTaskId} has ended; reply with ${waiting}, or cancel it`,
      [{ loc: ["params", "message", "taskId"], msg: `must be ${waiting}, the task waiting for input`, type: "value_error" }],
    );
  }
  if (waiting !== undefined) {
    throw invalidParams(
      `message.taskId is required: context ${contextId} waits for the answer to task ${waiting} (input-required); reply with its taskId, or cancel it`,
      [{ loc: ["params", "message", "taskId"], msg: "Field required", type: "missing" }],
    );
  }
  return { contextId };
}

/** A task status in `state` at `at` (epoch ms). */
export const status = (state: TaskState, at: number, message?: Message) => ({
  state,
  timestamp: new Date(at).toISOString(),
  ...(message ? { message } : {}),
});

/** -32004: a context runs one task at a time (here, or on another replica). */
export const busyContext = (contextId: string, what: string) =>
  new RpcError(
    RpcErrorCode.unsupportedOperation,
    `This operation is not supported: context ${contextId} is still running ${what}; wait for it (tasks/get) or cancel it (tasks/cancel)`,
  );
