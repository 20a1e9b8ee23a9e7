import {
  AgentCard,
  type CancelTaskRequest,
  type GetTaskRequest,
  type ListTasksRequest,
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
import type { IncomingHttpHeaders } from "node:http";
import type { Assistant } from "./graph-config.ts";
import { parseParams } from "./rpc.ts";
import { RpcError } from "./rpc-error.ts";
import { checkHistoryLength, type HistoryView, historyScopeOf } from "./task-history.ts";
import type { RunTrace, TaskRunner } from "./task-runner.ts";
import { pageToken } from "./task-list.ts";
import { listQueryFromV1 } from "./v1-list.ts";
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

/** What one v1.0 request runs on: the assistant's runner, and the request as sent (its headers, its raw params). */
export interface V1Request {
  assistant: Assistant;
  runner: TaskRunner;
  trace: RunTrace;
  card: OurCard;
  headers: IncomingHttpHeaders;
  /**
   * The params as sent: the SDK's parser keeps only v1.0's fields, and `historyScope` (the platform agent server's
   * extension, task-history.ts) is not one of them.
   */
  params: unknown;
}

/** The v1.0 methods, on one assistant's runner. Push notifications are not offered. */
class V1RequestHandler implements A2ARequestHandler {
  readonly #on: V1Request;
  /** The database was away while this request ran: the route answers 503 with Retry-After, not the SDK's -32603 at 200. */
  databaseAway: unknown;

  constructor(on: V1Request) {
    this.#on = on;
  }

  #guard<T>(work: () => Promise<T>): Promise<T> {
    return sdkErrors(work).catch((err: unknown) => {
      if (databaseUnavailable(err)) this.databaseAway = err;
      throw err;
    });
  }

  /** The history view a method's answer has: `historyScope` from its params (at `path`), or the header. */
  #view(path: string[], historyLength: number | undefined): HistoryView {
    let scope: unknown = this.#on.params;
    for (const key of path) scope = (scope as Record<string, unknown> | undefined)?.[key];
    return { scope: historyScopeOf({ scope, headers: this.#on.headers, at: ["params", ...path] }), historyLength };
  }

  async getAgentCard(): Promise<AgentCard> {
    return AgentCard.fromJSON(this.#on.card);
  }

  /** The card declares no extended card (capabilities.extendedAgentCard): UnsupportedOperation, as v1.0 says. */
  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new UnsupportedOperationError(
      "GetExtendedAgentCard is not supported: this agent has no extended card (capabilities.extendedAgentCard is false); its public agent card is the whole card",
    );
  }

  async #start(request: SendMessageRequest) {
    const params = parseParams(MessageSendParams, sendParamsFromV1(request));
    if (params.configuration?.pushNotificationConfig !== undefined) {
      throw new RpcError(
        RpcErrorCode.pushNotificationNotSupported,
        "Push Notification is not supported: read the task with GetTask or follow it with SendStreamingMessage",
      );
    }
    const { assistant, runner, trace } = this.#on;
    return { params, run: await runner.start(assistant, params, trace, "refuse") };
  }

  sendMessage(request: SendMessageRequest): Promise<Message | Task> {
    return this.#guard(async () => {
      const view = this.#view(["configuration", "historyScope"], request.configuration?.historyLength);
      const { params, run } = await this.#start(request);
      return v1Task(await this.#on.runner.present(params.configuration?.blocking === false ? run.task : await run.done, view));
    });
  }

  async *sendMessageStream(request: SendMessageRequest): AsyncGenerator<StreamResponse> {
    const events = await this.#guard(async () => (await this.#start(request)).run.events());
    for await (const event of events) yield v1StreamEvent(event);
  }

  getTask(request: GetTaskRequest): Promise<Task> {
    return this.#guard(async () => {
      checkHistoryLength(request.historyLength, ["params", "historyLength"]);
      const view = this.#view(["historyScope"], request.historyLength);
      const { assistant, runner } = this.#on;
      return v1Task(await runner.present(await runner.get(assistant, request.id), view));
    });
  }

  cancelTask(request: CancelTaskRequest): Promise<Task> {
    return this.#guard(async () => v1Task(await this.#on.runner.cancel(this.#on.assistant, request.id)));
  }

  /** The task as it is now, then its new events. As the SDK's DefaultRequestHandler: a task that ended has nothing to follow. */
  async *resubscribe(request: SubscribeToTaskRequest): AsyncGenerator<StreamResponse> {
    const { assistant, runner } = this.#on;
    const events = await this.#guard(async () => {
      const task = await runner.get(assistant, request.id);
      if (TERMINAL_STATES.has(task.status.state)) {
        throw new RpcError(
          RpcErrorCode.unsupportedOperation,
          `Task ${request.id} is in a terminal state (${task.status.state}) and cannot be subscribed to; read it with GetTask`,
        );
      }
      return runner.resubscribe(assistant, request.id, {
        scope: historyScopeOf({ scope: undefined, headers: this.#on.headers, at: [] }),
        historyLength: undefined,
      });
    });
    for await (const event of events) yield v1StreamEvent(event);
  }

  /** This assistant's tasks, newest first, a page at a time (`contextId`, `status`, `pageSize`, `pageToken`). */
  listTasks(request: ListTasksRequest): Promise<ListTasksResponse> {
    return this.#guard(async () => {
      const { query, includeArtifacts } = listQueryFromV1(request);
      const view = this.#view(["historyScope"], request.historyLength);
      const page = await this.#on.runner.list(this.#on.assistant, query, view);
      return {
        tasks: page.tasks.map((task) => v1Task(includeArtifacts ? task : { ...task, artifacts: [] })),
        nextPageToken: page.next ? pageToken(page.next) : "",
        pageSize: query.limit,
        totalSize: page.total,
      };
    });
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
export async function serveV1(body: unknown, on: Omit<V1Request, "params">): Promise<{ response: unknown } | EventStream> {
  const requests = new V1RequestHandler({ ...on, params: (body as { params?: unknown }).params });
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
