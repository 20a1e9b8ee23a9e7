import { randomUUID } from "node:crypto";
import { Uuid } from "../protocol/common.ts";
import { TERMINAL_STATES, type Message } from "../protocol/a2a.ts";
import type { Assistant } from "./graph-config.ts";
import { invalidParams, TaskEndedError, taskNotFound } from "./rpc-error.ts";
import type { StoredTask, TaskStore } from "./task-store.ts";

/**
 * The context a message continues, checked: a given taskId must be this assistant's, in the given context, and
 * waiting for input (the graph interrupted): the message resumes it. As the SDK's DefaultRequestHandler does, a
 * task that ended is not reopened, and a context waiting for input takes only a reply naming its task.
 */
export async function contextFor(
  store: TaskStore,
  assistant: Assistant,
  message: Message,
  runningHere: (taskId: string) => boolean,
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
    if (TERMINAL_STATES.has(state)) throw new TaskEndedError(message.taskId, state);
    if (state !== "input-required" || runningHere(stored.task.id)) return { contextId: stored.task.contextId };
    return { contextId: stored.task.contextId, resume: stored };
  }
  if (message.contextId === undefined) return { contextId: randomUUID() };
  const context = await store.context(message.contextId);
  if (context && context.graphId !== assistant.graphId) throw invalidParams(`context ${message.contextId} belongs to another assistant`);
  const waiting = context?.waitingTaskId;
  if (waiting !== undefined) {
    throw invalidParams(
      `message.taskId is required: context ${message.contextId} waits for the answer to task ${waiting} (input-required); reply with its taskId, or cancel it`,
      [{ loc: ["params", "message", "taskId"], msg: "Field required", type: "missing" }],
    );
  }
  return { contextId: message.contextId };
}
