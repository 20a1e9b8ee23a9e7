import type * as z from "zod";
import { EventStream } from "../http/exchange.ts";
import { MessageSendParams, RpcErrorCode, RpcRequest, TaskIdParams, TaskQueryParams, type RpcId, type Task } from "../protocol/a2a.ts";
import { toValidationErrors, type ValidationError } from "../protocol/validation-error.ts";
import type { Assistant } from "./graph-config.ts";
import { invalidParams, RpcError } from "./rpc-error.ts";
import { withHistory, type RunTrace, type TaskRunner } from "./task-runner.ts";

/** A2A methods this server does not offer (push notifications, extended cards): -32004, not -32601. */
const UNSUPPORTED_METHODS = new Set([
  "tasks/pushNotificationConfig/set",
  "tasks/pushNotificationConfig/get",
  "tasks/pushNotificationConfig/list",
  "tasks/pushNotificationConfig/delete",
  "agent/getAuthenticatedExtendedCard",
]);

const describe = (detail: ValidationError[]) =>
  detail
    .slice(0, 5)
    .map((d) => `${d.loc.join(".")}: ${d.msg}`)
    .join("; ");

/** The request's id when the body has a usable one: an error answer echoes it. */
export function requestIdOf(body: unknown): RpcId | null {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === "string" || (typeof id === "number" && Number.isInteger(id)) ? id : null;
}

/** A JSON-RPC 2.0 request, or -32600 naming what is wrong with it. */
export function parseRpcRequest(body: unknown): RpcRequest {
  if (Array.isArray(body))
    throw new RpcError(
      RpcErrorCode.invalidRequest,
      "Request payload validation error: batch requests are not supported; send one request per POST",
    );
  const result = RpcRequest.safeParse(body);
  if (!result.success) {
    const detail = toValidationErrors(result.error, body, "body");
    throw new RpcError(RpcErrorCode.invalidRequest, `Request payload validation error: ${describe(detail)}`, { data: detail });
  }
  return result.data;
}

function parseParams<S extends z.ZodType>(schema: S, params: unknown): z.output<S> {
  const result = schema.safeParse(params);
  if (!result.success) {
    const detail = toValidationErrors(result.error, params, "params");
    throw invalidParams(describe(detail), detail);
  }
  return result.data;
}

export const rpcResult = (id: RpcId | null, result: unknown) => ({ jsonrpc: "2.0" as const, id, result });
export const rpcError = (id: RpcId | null, error: RpcError) => ({
  jsonrpc: "2.0" as const,
  id,
  error: { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) },
});

/**
 * Runs one A2A JSON-RPC method on an assistant: its result, or an EventStream of JSON-RPC responses for
 * message/stream. Throws an RpcError for the caller to answer.
 */
export async function dispatch(
  request: RpcRequest,
  assistant: Assistant,
  runner: TaskRunner,
  trace: RunTrace,
): Promise<{ result: unknown } | EventStream> {
  switch (request.method) {
    case "message/send": {
      const params = parseParams(MessageSendParams, request.params);
      refusePushNotifications(params);
      const run = runner.start(assistant, params, trace);
      if (params.configuration?.blocking === false) return { result: run.task };
      return { result: withHistory(await run.done, params.configuration?.historyLength) };
    }
    case "message/stream": {
      const params = parseParams(MessageSendParams, request.params);
      refusePushNotifications(params);
      const run = runner.start(assistant, params, trace);
      return new EventStream(responses(request.id, run.events()));
    }
    case "tasks/get": {
      const params = parseParams(TaskQueryParams, request.params);
      return { result: runner.get(assistant, params.id, params.historyLength) };
    }
    case "tasks/resubscribe": {
      const params = parseParams(TaskIdParams, request.params);
      return new EventStream(responses(request.id, runner.resubscribe(assistant, params.id)));
    }
    case "tasks/cancel": {
      const params = parseParams(TaskIdParams, request.params);
      return { result: await runner.cancel(assistant, params.id) };
    }
    default:
      if (UNSUPPORTED_METHODS.has(request.method))
        throw new RpcError(RpcErrorCode.unsupportedOperation, `This operation is not supported: ${request.method}`);
      throw new RpcError(
        RpcErrorCode.methodNotFound,
        `Method not found: ${request.method}; this agent serves message/send, message/stream, tasks/get, tasks/cancel and tasks/resubscribe`,
      );
  }
}

function refusePushNotifications(params: MessageSendParams): void {
  if (params.configuration?.pushNotificationConfig !== undefined) {
    throw new RpcError(
      RpcErrorCode.pushNotificationNotSupported,
      "Push Notification is not supported: read the task with tasks/get or use message/stream",
    );
  }
}

async function* responses(id: RpcId, events: AsyncIterable<unknown>): AsyncGenerator<unknown> {
  for await (const event of events) yield rpcResult(id, event);
}

/** Whether a request's result is a task that failed (a canceled one did what its caller asked). */
export function taskFailed(result: unknown): boolean {
  const state = (result as Task | undefined)?.status?.state;
  return state === "failed" || state === "rejected";
}
