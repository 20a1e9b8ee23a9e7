import {
  Role,
  TaskState as V1TaskState,
  type Artifact as V1Artifact,
  type Message as V1Message,
  type Part as V1Part,
  type SendMessageRequest,
  type StreamResponse,
  type Task as V1Task,
  type TaskStatus as V1TaskStatus,
} from "@a2a-js/sdk";
import type { Artifact, Message, Part, StreamEvent, Task, TaskState, TaskStatus } from "../protocol/a2a.ts";

// A2A v1.0 <-> the agent server's own model (the v0.3 shapes its task store keeps). The SDK's JSON-RPC handler reads
// and writes the v1.0 wire (ProtoJSON, enum names, `{"task": ...}` results); these functions only move fields
// between its types and ours. Requests come out in v0.3 shape and go through the same zod checks as a v0.3 request.

export const V1_STATES: Record<TaskState, V1TaskState> = {
  submitted: V1TaskState.TASK_STATE_SUBMITTED,
  working: V1TaskState.TASK_STATE_WORKING,
  "input-required": V1TaskState.TASK_STATE_INPUT_REQUIRED,
  completed: V1TaskState.TASK_STATE_COMPLETED,
  canceled: V1TaskState.TASK_STATE_CANCELED,
  failed: V1TaskState.TASK_STATE_FAILED,
  rejected: V1TaskState.TASK_STATE_REJECTED,
  "auth-required": V1TaskState.TASK_STATE_AUTH_REQUIRED,
  unknown: V1TaskState.TASK_STATE_UNSPECIFIED,
};

const ROLES: Partial<Record<Role, Message["role"]>> = { [Role.ROLE_USER]: "user", [Role.ROLE_AGENT]: "agent" };

/** A v1.0 part in v0.3 shape: raw bytes and URLs become a file part, as v0.3 carries them. */
function partFromV1(part: V1Part): unknown {
  const metadata = part.metadata ? { metadata: part.metadata } : {};
  const file = (source: Record<string, string>) => ({
    kind: "file",
    file: { ...source, ...(part.mediaType ? { mimeType: part.mediaType } : {}), ...(part.filename ? { name: part.filename } : {}) },
    ...metadata,
  });
  switch (part.content?.$case) {
    case "text":
      return { kind: "text", text: part.content.value, ...metadata };
    case "data":
      return { kind: "data", data: part.content.value, ...metadata };
    case "raw":
      return file({ bytes: Buffer.from(part.content.value).toString("base64") });
    case "url":
      return file({ uri: part.content.value });
    default:
      // No content: left for the shared check to refuse, naming the part.
      return { ...metadata };
  }
}

/** SendMessage's params as v0.3 message/send params, for the same checks and the same runner. */
export function sendParamsFromV1(request: SendMessageRequest): unknown {
  const message = request.message;
  const configuration = request.configuration;
  return {
    message: message && {
      kind: "message",
      messageId: message.messageId,
      role: ROLES[message.role],
      parts: message.parts.map(partFromV1),
      ...(message.contextId ? { contextId: message.contextId } : {}),
      ...(message.taskId ? { taskId: message.taskId } : {}),
      ...(message.referenceTaskIds.length > 0 ? { referenceTaskIds: message.referenceTaskIds } : {}),
      ...(message.metadata ? { metadata: message.metadata } : {}),
    },
    ...(configuration && {
      configuration: {
        blocking: !configuration.returnImmediately,
        ...(configuration.historyLength === undefined ? {} : { historyLength: configuration.historyLength }),
        ...(configuration.taskPushNotificationConfig ? { pushNotificationConfig: configuration.taskPushNotificationConfig } : {}),
      },
    }),
    ...(request.metadata ? { metadata: request.metadata } : {}),
  };
}

function v1Part(part: Part): V1Part {
  const base = { metadata: part.metadata, filename: "", mediaType: "" };
  if (part.kind === "text") return { ...base, content: { $case: "text", value: part.text } };
  if (part.kind === "data") return { ...base, content: { $case: "data", value: part.data } };
  const file = part.file as { bytes?: unknown; uri?: unknown; mimeType?: unknown; name?: unknown };
  const named = { ...base, filename: String(file.name ?? ""), mediaType: String(file.mimeType ?? "") };
  return typeof file.bytes === "string"
    ? { ...named, content: { $case: "raw", value: Buffer.from(file.bytes, "base64") } }
    : { ...named, content: { $case: "url", value: String(file.uri ?? "") } };
}

export function v1Message(message: Message): V1Message {
  return {
    messageId: message.messageId,
    contextId: message.contextId ?? "",
    taskId: message.taskId ?? "",
    role: message.role === "user" ? Role.ROLE_USER : Role.ROLE_AGENT,
    parts: message.parts.map(v1Part),
    metadata: message.metadata,
    extensions: [],
    referenceTaskIds: message.referenceTaskIds ?? [],
  };
}

function v1Status(status: TaskStatus): V1TaskStatus {
  return { state: V1_STATES[status.state], message: status.message && v1Message(status.message), timestamp: status.timestamp };
}

function v1Artifact(artifact: Artifact): V1Artifact {
  return {
    artifactId: artifact.artifactId,
    name: artifact.name ?? "",
    description: artifact.description ?? "",
    parts: artifact.parts.map(v1Part),
    metadata: undefined,
    extensions: [],
  };
}

export function v1Task(task: Task): V1Task {
  return {
    id: task.id,
    contextId: task.contextId,
    status: v1Status(task.status),
    artifacts: (task.artifacts ?? []).map(v1Artifact),
    history: (task.history ?? []).map(v1Message),
    metadata: task.metadata,
  };
}

export function v1StreamEvent(event: StreamEvent): StreamResponse {
  switch (event.kind) {
    case "task":
      return { payload: { $case: "task", value: v1Task(event) } };
    case "message":
      return { payload: { $case: "message", value: v1Message(event) } };
    case "status-update": {
      const { taskId, contextId, status } = event;
      return { payload: { $case: "statusUpdate", value: { taskId, contextId, status: v1Status(status), metadata: undefined } } };
    }
    case "artifact-update": {
      const { taskId, contextId, artifact, append, lastChunk } = event;
      const value = {
        taskId,
        contextId,
        artifact: v1Artifact(artifact),
        append: append ?? false,
        lastChunk: lastChunk ?? false,
        metadata: undefined,
      };
      return { payload: { $case: "artifactUpdate", value } };
    }
  }
}
