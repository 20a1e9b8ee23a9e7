import type { IncomingHttpHeaders } from "node:http";
import type * as z from "zod";
import { EventStream, NamedEvent } from "../http/exchange.ts";
import { MessageSendParams, RpcErrorCode, RpcRequest, TaskIdParams, TaskQueryParams, type RpcId } from "../protocol/a2a.ts";
import { toValidationErrors, type ValidationError } from "../protocol/validation-error.ts";
import type { Assistant } from "./graph-config.ts";
import { invalidParams, RpcError } from "./rpc-error.ts";
import { historyScopeOf } from "./task-history.ts";
import type { RunTrace, TaskRunner } from "./task-runner.ts";

/** A2A v0.3 methods this server does not offer, and the error each answers (not -32601: they are A2A's). */
const UNSUPPORTED_METHODS = new Map<string, RpcError>([
  ...["set", "get", "list", "delete"].map(
    (verb) =>
      [
        `tasks/pushNotificationConfig/${verb}`,
        new RpcError(
          RpcErrorCode.pushNotificationNotSupported,
          "Push Notification is not supported: read the task with tasks/get or follow it with message/stream",
        ),
      ] as const,
  ),
  [
    "agent/getAuthenticatedExtendedCard",
    new RpcError(RpcErrorCode.extendedCardNotConfigured, "Extended Card not configured: the public agent card is the whole card"),
  ],
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

export function parseParams<S extends z.ZodType>(schema: S, params: unknown): z.output<S> {
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
 * Runs one A2A v0.3 JSON-RPC method on an assistant: its result, or an EventStream of JSON-RPC responses for
 * message/stream and tasks/resubscribe. Throws an RpcError for the caller to answer; a streaming method's errors,
 * even those found before it starts, come inside its stream (as the SDK's handler sends them), where a client
 * reading the stream finds their code.
 */
export async function dispatch(
  request: RpcRequest,
  on: { assistant: Assistant; runner: TaskRunner; trace: RunTrace; headers: IncomingHttpHeaders },
): Promise<{ result: unknown } | EventStream> {
  const { assistant, runner, trace, headers } = on;
  const id = request.id ?? null;
  switch (request.method) {
    case "message/send": {
      const params = parseParams(MessageSendParams, request.params);
      refusePushNotifications(params);
      const at = ["params", "configuration", "historyScope"];
      const view = {
        scope: historyScopeOf({ scope: params.configuration?.historyScope, headers, at }),
        historyLength: params.configuration?.historyLength,
      };
      const run = await runner.start(assistant, params, trace, "new-task");
      return { result: await runner.present(params.configuration?.blocking === false ? run.task : await run.done, view) };
    }
    case "message/stream":
      return await streamed(id, async () => {
        const params = parseParams(MessageSendParams, request.params);
        refusePushNotifications(params);
        return (await runner.start(assistant, params, trace, "new-task")).events();
      });
    case "tasks/get": {
      const params = parseParams(TaskQueryParams, request.params);
      const scope = historyScopeOf({ scope: params.historyScope, headers, at: ["params", "historyScope"] });
      return { result: await runner.present(await runner.get(assistant, params.id), { scope, historyLength: params.historyLength }) };
    }
    case "tasks/resubscribe":
      return await streamed(id, async () => {
        const params = parseParams(TaskIdParams, request.params);
        const scope = historyScopeOf({ scope: undefined, headers, at: [] });
        return runner.resubscribe(assistant, params.id, { scope, historyLength: undefined });
      });
    case "tasks/cancel": {
      const params = parseParams(TaskIdParams, request.params);
      return { result: await runner.cancel(assistant, params.id) };
    }
    default: {
      const unsupported = UNSUPPORTED_METHODS.get(request.method);
      if (unsupported) throw unsupported;
      throw new RpcError(
        RpcErrorCode.methodNotFound,
        `Method not found: ${request.method}; this agent serves message/send, message/stream, tasks/get, tasks/cancel and tasks/resubscribe (A2A v0.3) and SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask and SubscribeToTask (A2A v1.0)`,
      );
    }
  }
}

/** The events `start` gives as JSON-RPC responses, or, when it throws an RpcError, that error as the stream's one event. */
async function streamed(id: RpcId | null, start: () => Promise<AsyncIterable<unknown>>): Promise<EventStream> {
  let events: AsyncIterable<unknown>;
  try {
    events = await start();
  } catch (err) {
    if (!(err instanceof RpcError)) throw err;
    return errorStream(id, err);
  }
  return new EventStream(responses(id, events));
}

/** A stream whose one event is `error`: how a streaming method answers an error found before it starts. */
export function errorStream(id: RpcId | null, error: RpcError): EventStream {
  return new EventStream(
    (async function* () {
      yield new NamedEvent("error", rpcError(id, error));
    })(),
  );
}

function refusePushNotifications(params: MessageSendParams): void {
  if (params.configuration?.pushNotificationConfig !== undefined) {
    throw new RpcError(
      RpcErrorCode.pushNotificationNotSupported,
      "Push Notification is not supported: read the task with tasks/get or use message/stream",
    );
  }
}

async function* responses(id: RpcId | null, events: AsyncIterable<unknown>): AsyncGenerator<unknown> {
  for await (const event of events) yield rpcResult(id, event);
}
