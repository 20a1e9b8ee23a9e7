// What the A2A v1.0 tests build with the official 1.x SDK's types: a user's text message, and a result read as a task.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Role, type Message, type SendMessageRequest, type Task } from "@a2a-js/sdk";

/** A SendMessage request of one text part, continuing `ids` when given. */
export const userMessage = (text: string, ids: { contextId?: string; taskId?: string } = {}): SendMessageRequest => ({
  tenant: "",
  metadata: undefined,
  configuration: undefined,
  message: {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" }],
    contextId: ids.contextId ?? "",
    taskId: ids.taskId ?? "",
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  },
});

/** The result, asserted to be a task (not a message). */
export const asTask = (result: Task | Message): Task => {
  assert.ok("status" in result && "id" in result, `a task, not ${JSON.stringify(result)}`);
  return result;
};
