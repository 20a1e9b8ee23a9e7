import * as z from "zod";

// A2A v0.3.0 over JSON-RPC 2.0: the shapes the agent server answers and the client sends, one schema each.
// Requests are checked strictly where the server acts on a field and loosely elsewhere (unknown keys pass), as a
// newer client may send fields this version does not know.

export const A2A_PROTOCOL_VERSION = "0.3.0";
/** The A2A versions the agent server speaks, as its agent card lists them (supportedInterfaces). */
export const A2A_SERVED_VERSIONS = ["1.0", "0.3"] as const;

/** A2A v0.3's JSON-RPC method names. */
export const A2A_V03_METHODS: ReadonlySet<string> = new Set([
  "message/send",
  "message/stream",
  "tasks/get",
  "tasks/cancel",
  "tasks/resubscribe",
  "tasks/pushNotificationConfig/set",
  "tasks/pushNotificationConfig/get",
  "tasks/pushNotificationConfig/list",
  "tasks/pushNotificationConfig/delete",
  "agent/getAuthenticatedExtendedCard",
]);

/**
 * A2A v1.0's JSON-RPC method names. Every v0.3 name has a slash (message/send); a request naming one of these is
 * a v1.0 request, on the same endpoint.
 */
export const A2A_V1_METHODS: ReadonlySet<string> = new Set([
  "SendMessage",
  "SendStreamingMessage",
  "GetTask",
  "ListTasks",
  "CancelTask",
  "SubscribeToTask",
  "CreateTaskPushNotificationConfig",
  "GetTaskPushNotificationConfig",
  "ListTaskPushNotificationConfigs",
  "DeleteTaskPushNotificationConfig",
  "GetExtendedAgentCard",
]);

/** JSON-RPC error codes: the standard ones and A2A's. */
export const RpcErrorCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  pushNotificationNotSupported: -32003,
  unsupportedOperation: -32004,
  contentTypeNotSupported: -32005,
  extendedCardNotConfigured: -32007,
  versionNotSupported: -32009,
} as const;

export const TextPart = z.looseObject({
  kind: z.literal("text"),
  text: z.string(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export const DataPart = z.looseObject({
  kind: z.literal("data"),
  data: z.record(z.string(), z.unknown()),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export const FilePart = z.looseObject({
  kind: z.literal("file"),
  file: z.record(z.string(), z.unknown()),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export const Part = z.discriminatedUnion("kind", [TextPart, DataPart, FilePart]);
export type Part = z.infer<typeof Part>;

export const Message = z.looseObject({
  kind: z.literal("message").default("message"),
  messageId: z.string().min(1, { message: "must not be empty" }),
  role: z.enum(["user", "agent"]),
  parts: z.array(Part).min(1, { message: "must hold at least one part" }),
  contextId: z.string().optional(),
  taskId: z.string().optional(),
  referenceTaskIds: z.array(z.string()).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type Message = z.infer<typeof Message>;

export const TaskState = z.enum([
  "submitted",
  "working",
  "input-required",
  "completed",
  "canceled",
  "failed",
  "rejected",
  "auth-required",
  "unknown",
]);
export type TaskState = z.infer<typeof TaskState>;
/** States a task never leaves: a later message starts a new task in the same context. */
export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set(["completed", "canceled", "failed", "rejected"]);

export const TaskStatus = z.object({ state: TaskState, message: Message.optional(), timestamp: z.string() });
export type TaskStatus = z.infer<typeof TaskStatus>;

export const Artifact = z.looseObject({
  artifactId: z.string(),
  name: z.string().optional(),
  description: z.string().optional(),
  parts: z.array(Part),
});
export type Artifact = z.infer<typeof Artifact>;

export const Task = z.looseObject({
  kind: z.literal("task"),
  id: z.string(),
  contextId: z.string(),
  status: TaskStatus,
  history: z.array(Message).optional(),
  artifacts: z.array(Artifact).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type Task = z.infer<typeof Task>;

export const TaskStatusUpdateEvent = z.looseObject({
  kind: z.literal("status-update"),
  taskId: z.string(),
  contextId: z.string(),
  status: TaskStatus,
  final: z.boolean(),
});
export type TaskStatusUpdateEvent = z.infer<typeof TaskStatusUpdateEvent>;

export const TaskArtifactUpdateEvent = z.looseObject({
  kind: z.literal("artifact-update"),
  taskId: z.string(),
  contextId: z.string(),
  artifact: Artifact,
  append: z.boolean().optional(),
  lastChunk: z.boolean().optional(),
});
export type TaskArtifactUpdateEvent = z.infer<typeof TaskArtifactUpdateEvent>;

/** What one message/stream event's `result` holds. */
export const StreamEvent = z.discriminatedUnion("kind", [Task, Message, TaskStatusUpdateEvent, TaskArtifactUpdateEvent]);
export type StreamEvent = z.infer<typeof StreamEvent>;

/** The most history messages an answer carries on request (`historyLength`), as the platform's agent server caps it. */
export const MAX_HISTORY_LENGTH = 10;
const HistoryLength = z
  .int()
  .nonnegative()
  .max(MAX_HISTORY_LENGTH, { message: `historyLength cannot exceed ${MAX_HISTORY_LENGTH}` });

export const MessageSendParams = z.looseObject({
  message: Message,
  configuration: z
    .looseObject({
      acceptedOutputModes: z.array(z.string()).optional(),
      historyLength: HistoryLength.optional(),
      /** false: answer once the task is submitted; the run goes on (read it with tasks/get). */
      blocking: z.boolean().optional(),
      pushNotificationConfig: z.unknown().optional(),
    })
    .optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type MessageSendParams = z.infer<typeof MessageSendParams>;

export const TaskQueryParams = z.looseObject({
  id: z.string().min(1, { message: "must not be empty" }),
  historyLength: HistoryLength.optional(),
});
export const TaskIdParams = z.looseObject({ id: z.string().min(1, { message: "must not be empty" }) });

export const RpcId = z.union([z.string(), z.int()]);
export type RpcId = z.infer<typeof RpcId>;

export const RpcRequest = z.object({
  jsonrpc: z.literal("2.0"),
  /** Absent: a notification, which is carried out and never answered. */
  id: RpcId.optional(),
  method: z.string().min(1, { message: "must not be empty" }),
  params: z.unknown().optional(),
  /** The platform's top-level trace metadata (not inside params): `thread_id` groups the turns of a conversation. */
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type RpcRequest = z.infer<typeof RpcRequest>;

export const RpcErrorBody = z.object({ code: z.int(), message: z.string(), data: z.unknown().optional() });
export type RpcErrorBody = z.infer<typeof RpcErrorBody>;

export const RpcResponse = z.union([
  z.object({ jsonrpc: z.literal("2.0"), id: RpcId.nullable(), result: z.unknown() }),
  z.object({ jsonrpc: z.literal("2.0"), id: RpcId.nullable(), error: RpcErrorBody }),
]);
export type RpcResponse = z.infer<typeof RpcResponse>;

export const AgentSkill = z.object({ id: z.string(), name: z.string(), description: z.string(), tags: z.array(z.string()) });

export const AgentInterface = z.object({ url: z.string(), protocolBinding: z.string(), protocolVersion: z.string() });

export const AgentCard = z.looseObject({
  protocolVersion: z.string(),
  /** v1.0: every endpoint with its binding and version; v0.3 clients read `url` and `preferredTransport`. */
  supportedInterfaces: z.array(AgentInterface).optional(),
  name: z.string(),
  description: z.string(),
  url: z.string(),
  preferredTransport: z.string().optional(),
  version: z.string(),
  capabilities: z.looseObject({ streaming: z.boolean().optional(), pushNotifications: z.boolean().optional() }),
  defaultInputModes: z.array(z.string()),
  defaultOutputModes: z.array(z.string()),
  skills: z.array(AgentSkill),
});
export type AgentCard = z.infer<typeof AgentCard>;
