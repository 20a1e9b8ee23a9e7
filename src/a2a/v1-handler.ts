import {
  AgentCard,
  type CancelTaskRequest,
  type GetTaskRequest,
  type ListTasksResponse,
  type Message,
  type SendMessageRequest,
  type StreamResponse,
  type SubscribeToTaskRequest,
  type Task,
  type TaskPushNotificationConfig,
} from "@a2a-js/sdk";
import {
  ContentTypeNotSupportedError,
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors";
import { JsonRpcRequestMalformedError } from "@a2a-js/sdk/errors";
import { type A2ARequestHandler, JsonRpcTransportHandler, ServerCallContext } from "@a2a-js/sdk/server";
import { databaseUnavailable } from "../database-unavailable.ts";
import { EventStream, NamedEvent } from "../http/exchange.ts";
import { MessageSendParams, RpcErrorCode, TERMINAL_STATES, type AgentCard as OurCard, type RpcId } from "../protocol/a2a.ts";
import type { Assistant } from "./graph-config.ts";
import { parseParams } from "./rpc.ts";
import { RpcError } from "./rpc-error.ts";
import { withHistory, type RunTrace, type TaskRunner } from "./task-runner.ts";
import { sendParamsFromV1, v1StreamEvent, v1Task } from "./v1-convert.ts";

// A2A v1.0 on the SDK's own JSON-RPC handler (@a2a-js/sdk 1.x JsonRpcTransportHandler): it reads the v1.0 wire
// (method names, ProtoJSON params, results, error codes) and calls this A2ARequestHandler, which runs the request on
// the same TaskRunner, task store and checks as v0.3. Loaded on the first v1.0 request: a v0.3-only caller never
// pays for the SDK's code.

/** Our RpcError as the SDK's error of the same code, which its handler words for the v1.0 wire. */
function sdkError(err: unknown): unknown {
  if (!(err instanceof RpcError)) return err;
  const message = err.message;
  switch (err.code) {
    case RpcErrorCode.taskNotFound:
      return new TaskNotFoundError(message);
    case RpcErrorCode.taskNotCancelable:
      return new TaskNotCancelableError(message);
    case RpcErrorCode.pushNotificationNotSupported:
      return new PushNotificationNotSupportedError(message);
    case RpcErrorCode.unsupportedOperation:
      return new UnsupportedOperationError(message);
    case RpcErrorCode.contentTypeNotSupported:
      return new ContentTypeNotSupportedError(message);
    case RpcErrorCode.invalidParams:
    case RpcErrorCode.invalidRequest:
      return new JsonRpcRequestMalformedError({ message, envelopeCode: err.code });
    default:
      return new Error(message);
  }
}

async function sdkErrors<T>(work: () => Promise<T> | T): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw sdkError(err);
  }
}

/** The v1.0 methods, on one assistant's runner. Push notifications and task lists are not offered. */
class V1RequestHandler implements A2ARequestHandler {
  readonly #assistant: Assistant;
  readonly #runner: TaskRunner;
  readonly #trace: RunTrace;
  readonly #card: OurCard;
  /** The database was away while this request ran: the route answers 503 with Retry-After, not the SDK's -32603 at 200. */
  databaseAway: unknown;

  constructor(assistant: Assistant, runner: TaskRunner, trace: RunTrace, card: OurCard) {
    this.#assistant = assistant;
    this.#runner = runner;
    this.#trace = trace;
    this.#card = card;
  }

  #guard<T>(work: () => Promise<T>): Promise<T> {
    return sdkErrors(work).catch((err: unknown) => {
      if (databaseUnavailable(err)) this.databaseAway = err;
      throw err;
    });
  }

  async getAgentCard(): Promise<AgentCard> {
    return AgentCard.fromJSON(this.#card);
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new ExtendedAgentCardNotConfiguredError("Extended Card not configured: the public agent card is the whole card");
  }

  async #start(request: SendMessageRequest) {
    const params = parseParams(MessageSendParams, sendParamsFromV1(request));
    if (params.configuration?.pushNotificationConfig !== undefined) {
      throw new RpcError(
        RpcErrorCode.pushNotificationNotSupported,
        "Push Notification is not supported: read the task with GetTask or follow it with SendStreamingMessage",
      );
    }
    return { params, run: await this.#runner.start(this.#assistant, params, this.#trace, "refuse") };
  }

  sendMessage(request: SendMessageRequest): Promise<Message | Task> {
    return this.#guard(async () => {
      const { params, run } = await this.#start(request);
      if (params.configuration?.blocking === false) return v1Task(run.task);
      return v1Task(withHistory(await run.done, params.configuration?.historyLength));
    });
  }

  async *sendMessageStream(request: SendMessageRequest): AsyncGenerator<StreamResponse> {
    const events = await this.#guard(async () => (await this.#start(request)).run.events());
    for await (const event of events) yield v1StreamEvent(event);
  }

  getTask(request: GetTaskRequest): Promise<Task> {
    return this.#guard(async () => v1Task(await this.#runner.get(this.#assistant, request.id, request.historyLength)));
  }

  cancelTask(request: CancelTaskRequest): Promise<Task> {
    return this.#guard(async () => v1Task(await this.#runner.cancel(this.#assistant, request.id)));
  }

  /** As the SDK's DefaultRequestHandler: a task that ended has nothing left to follow. */
  async *resubscribe(request: SubscribeToTaskRequest): AsyncGenerator<StreamResponse> {
    const events = await this.#guard(async () => {
      const task = await this.#runner.get(this.#assistant, request.id);
      if (TERMINAL_STATES.has(task.status.state)) {
        throw new RpcError(
          RpcErrorCode.unsupportedOperation,
          `Task ${request.id} is in a terminal state (${task.status.state}) and cannot be subscribed to; read it with GetTask`,
        );
      }
      return this.#runner.resubscribe(this.#assistant, request.id);
    });
    for await (const event of events) yield v1StreamEvent(event);
  }

  async listTasks(): Promise<ListTasksResponse> {
    throw new UnsupportedOperationError("ListTasks is not supported: keep the task ids SendMessage answers");
  }

  async createTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    throw pushNotSupported();
  }

  async getTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    throw pushNotSupported();
  }

  async listTaskPushNotificationConfigs(): Promise<never> {
    throw pushNotSupported();
  }

  async deleteTaskPushNotificationConfig(): Promise<void> {
    throw pushNotSupported();
  }
}

const pushNotSupported = () =>
  new PushNotificationNotSupportedError(
    "Push Notification is not supported: read the task with GetTask or follow it with SendStreamingMessage",
  );

/**
 * One v1.0 JSON-RPC request: the JSON-RPC response, or an EventStream of them. A stream's errors, those found
 * before its first event included, come inside it as `event: error`, where the client reads their code.
 */
export async function serveV1(
  body: unknown,
  context: { assistant: Assistant; runner: TaskRunner; trace: RunTrace; card: OurCard },
): Promise<{ response: unknown } | EventStream> {
  const requests = new V1RequestHandler(context.assistant, context.runner, context.trace, context.card);
  const outcome = await new JsonRpcTransportHandler(requests).handle(body as Record<string, unknown>, new ServerCallContext());
  if (requests.databaseAway !== undefined) throw requests.databaseAway;
  if (!(Symbol.asyncIterator in (outcome as object))) return { response: outcome };
  const id = ((body as { id?: RpcId }).id ?? null) as RpcId | null;
  return new EventStream(withErrorEvent(id, outcome as AsyncIterable<unknown>));
}

async function* withErrorEvent(id: RpcId | null, events: AsyncIterable<unknown>): AsyncGenerator<unknown> {
  try {
    yield* events;
  } catch (err) {
    yield new NamedEvent("error", { jsonrpc: "2.0", id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) });
  }
}
