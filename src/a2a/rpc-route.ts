import { context, type Span, SpanKind, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import * as z from "zod";
import { asDatabaseUnavailable, type DatabaseUnavailableError, databaseUnavailable } from "../database-unavailable.ts";
import { HttpError } from "../errors.ts";
import { Answer, EventStream, NamedEvent, type HttpRequest } from "../http/exchange.ts";
import type { HttpServer } from "../http/server.ts";
import { parseRequest, RequestValidationError } from "../http/validate.ts";
import { A2A_V03_METHODS, A2A_V1_METHODS, RpcErrorCode, type AgentCard, type RpcId, type RpcRequest } from "../protocol/a2a.ts";
import { agentCard } from "./agent-card.ts";
import type { Assistant } from "./graph-config.ts";
import { dispatch, errorStream, parseRpcRequest, requestIdOf, rpcError, rpcResult } from "./rpc.ts";
import { RpcError } from "./rpc-error.ts";
import type { AgentServerSettings } from "./server.ts";
import type { A2aRequestObservation, SidecarReporter } from "./sidecar-reporter.ts";
import type { TaskRunner } from "./task-runner.ts";
import { THREAD_ID_ATTRIBUTE, threadIdOf } from "./thread-id.ts";
import { cardAnswer, versionRefusal } from "./rpc-headers.ts";

/** The endpoint metrics name: the route template, as the sidecar's privacy filter would make it anyway. */
const A2A_ENDPOINT = "/a2a/{assistant_id}";

export interface A2aRouteContext {
  settings: AgentServerSettings;
  /** Assistants by graph id and by UUID. */
  byId: ReadonlyMap<string, Assistant>;
  runner: TaskRunner;
  tracer: Tracer;
  reporter: SidecarReporter | undefined;
}

/** The A2A routes: each assistant's agent card and its JSON-RPC endpoint (POST /a2a/{assistant_id}). */
export function registerA2aRoutes(server: HttpServer, ctx: A2aRouteContext): void {
  const card = (assistantId: string, request: HttpRequest) => cardAnswer(cardOf(ctx, assistantId, request), request.headers);
  const CardQuery = z.looseObject({ assistant_id: z.string().min(1, { message: "Field required" }) });
  server.get("/.well-known/agent-card.json", (request) => card(parseRequest(CardQuery, request.query, "query").assistant_id, request));
  server.get("/a2a/{assistant_id}/.well-known/agent-card.json", (request) => card(request.params.assistant_id!, request));
  server.post("/a2a/{assistant_id}", (request) => serveRpc(request, ctx), { body: "json", errors: rpcBodyError });
}

/** The agent card of an assistant, its endpoint under the public URL or the Host the caller used. */
function cardOf(ctx: A2aRouteContext, assistantId: string, request: HttpRequest): AgentCard {
  const assistant = ctx.byId.get(assistantId);
  if (!assistant)
    throw new HttpError(
      "EGRESS_ERR_ASSISTANT_NOT_FOUND",
      `no assistant ${assistantId}; graph.json names ${ctx.settings.graphs.assistants.map((a) => a.graphId).join(", ")}`,
    );
  const baseUrl = ctx.settings.publicUrl ?? `http://${request.headers.host ?? `${ctx.settings.listen.host}:${ctx.settings.listen.port}`}`;
  return agentCard(assistant, assistantId, baseUrl.replace(/\/+$/, ""));
}

/** Errors met before the handler runs (the body), worded as JSON-RPC answers. */
function rpcBodyError(error: unknown, request: HttpRequest): Answer {
  if (error instanceof RequestValidationError) {
    return new Answer(
      400,
      rpcError(null, new RpcError(RpcErrorCode.parseError, `Invalid JSON payload: ${error.detail[0]?.msg ?? "not JSON"}`)),
    );
  }
  if (error instanceof HttpError)
    return new Answer(error.statusCode, rpcError(null, new RpcError(RpcErrorCode.invalidRequest, `Invalid Request: ${error.message}`)));
  request.log.error({ err: error }, "request failed");
  return new Answer(500, rpcError(null, new RpcError(RpcErrorCode.internalError, "Internal error; see the agent server log")));
}

/** One JSON-RPC request: dispatched in a span, observed for the sidecar's metrics, errors worded as JSON-RPC answers. */
async function serveRpc(request: HttpRequest, ctx: A2aRouteContext): Promise<Answer | EventStream | unknown> {
  const { byId, runner, tracer, reporter } = ctx;
  const started = performance.now();
  const observation: A2aRequestObservation = { endpoint: A2A_ENDPOINT, method: "invalid", failed: true, durationMs: 0 };
  const observe = (failed: boolean) => reporter?.observe({ ...observation, failed, durationMs: performance.now() - started });
  const assistantId = request.params.assistant_id!;
  const assistant = byId.get(assistantId);
  const id = requestIdOf(request.body);
  if (!assistant) {
    observe(true);
    return new Answer(404, rpcError(id, new RpcError(RpcErrorCode.taskNotFound, `Assistant not found: ${assistantId}`)));
  }
  const span = tracer.startSpan("a2a request", {
    kind: SpanKind.SERVER,
    attributes: { "rpc.system": "jsonrpc", "platform.assistant_id": assistant.graphId },
  });
  let notification = false;
  try {
    const rpc = parseRpcRequest(request.body);
    notification = rpc.id === undefined;
    // A metric label: a caller's made-up method name is "unknown", not a new series at the sidecar.
    observation.method = A2A_V03_METHODS.has(rpc.method) || A2A_V1_METHODS.has(rpc.method) ? rpc.method : "unknown";
    span.updateName(`a2a ${observation.method}`);
    span.setAttribute("rpc.method", observation.method);
    const threadId = traceThreadId(rpc);
    if (threadId !== undefined) span.setAttribute(THREAD_ID_ATTRIBUTE, threadId);
    const on = { assistant, runner, trace: { threadId, parent: trace.setSpan(context.active(), span) }, headers: request.headers };
    const refused = versionRefusal(request.headers);
    const outcome = refused
      ? refusal(rpc, refused)
      : A2A_V1_METHODS.has(rpc.method)
        ? await (await import("./v1-handler.ts")).serveV1(request.body, { ...on, card: cardOf(ctx, assistantId, request) })
        : await dispatch(rpc, on).then((answer) =>
            answer instanceof EventStream ? answer : { response: rpcResult(rpc.id ?? null, answer.result) },
          );
    if (notification) return notified(outcome, request);
    if (outcome instanceof EventStream) return new EventStream(observed(outcome.events, observe));
    observe(responseFailed(outcome.response));
    return outcome.response;
  } catch (err) {
    if (databaseUnavailable(err) && !notification) return databaseAway(id, err, observe, span);
    let error = err;
    if (!(error instanceof RpcError)) {
      request.log.error({ err }, "A2A request failed");
      error = new RpcError(RpcErrorCode.internalError, "Internal error; see the agent server log");
    }
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as RpcError).message });
    observe(true);
    // A valid request without an id is a notification: not even its error is answered. An invalid one is.
    if (notification) return new Answer(204, undefined);
    return new Answer((error as RpcError).httpStatus, rpcError(id, error as RpcError));
  } finally {
    span.end();
  }
}

const STREAMING_METHODS = new Set(["message/stream", "tasks/resubscribe", "SendStreamingMessage", "SubscribeToTask"]);

/** A request refused before its method runs: an error answer, or for a streaming method a stream of that error. */
function refusal(rpc: RpcRequest, error: RpcError): { response: unknown } | EventStream {
  const id = rpc.id ?? null;
  return STREAMING_METHODS.has(rpc.method) ? errorStream(id, error) : { response: rpcError(id, error) };
}

/** The database away: HTTP 503 with Retry-After (a client or balancer may try again), the JSON-RPC error inside. */
function databaseAway(id: RpcId | null, err: unknown, observe: (failed: boolean) => void, span: Span): Answer {
  const away = asDatabaseUnavailable(err) as DatabaseUnavailableError;
  span.setStatus({ code: SpanStatusCode.ERROR, message: away.code });
  observe(true);
  return new Answer(
    away.statusCode,
    rpcError(id, new RpcError(RpcErrorCode.internalError, `Internal error: ${away.message}`)),
    undefined,
    away.headers,
  );
}

/**
 * A notification (no id) is carried out and never answered (JSON-RPC 2.0): 204 without a body. A stream is read to
 * its end in the background, as nobody reads it, so its run goes on as it would for a caller.
 */
function notified(outcome: { response: unknown } | EventStream, request: HttpRequest): Answer {
  if (outcome instanceof EventStream) {
    (async () => {
      for await (const _ of outcome.events);
    })().catch((err) => request.log.warn({ err }, "a notification's stream failed"));
  }
  return new Answer(204, undefined);
}

/**
 * The conversation's trace thread id. The message's contextId comes first, as the platform's agent server does
 * ("the server converts contextId to thread_id"); a first message, which has none yet, joins the caller's
 * `metadata.thread_id` when it sends one, else the new contextId (the runner's default).
 */
function traceThreadId(rpc: RpcRequest): string | undefined {
  const contextId = (rpc.params as { message?: { contextId?: unknown } } | undefined)?.message?.contextId;
  return typeof contextId === "string" && contextId !== "" ? contextId : threadIdOf(rpc);
}

/** Whether a JSON-RPC response (v0.3 or v1.0) is an error or a task that failed (a canceled one did what was asked). */
function responseFailed(response: unknown): boolean {
  const body = response as { error?: unknown; result?: unknown } | undefined;
  return body?.error !== undefined || FAILED_STATES.has(finalState(body?.result) ?? "");
}

const FAILED_STATES = new Set(["failed", "rejected", "TASK_STATE_FAILED", "TASK_STATE_REJECTED"]);

/** The task state a result or stream event carries, whichever version's shape it has. */
function finalState(result: unknown): string | undefined {
  const r = result as
    | { status?: { state?: string }; task?: { status?: { state?: string } }; statusUpdate?: { status?: { state?: string } } }
    | undefined;
  return r?.status?.state ?? r?.task?.status?.state ?? r?.statusUpdate?.status?.state;
}

/** A stream's responses, observed once it ends: failed when it ends in an error or a failed task. */
async function* observed(events: AsyncIterable<unknown>, observe: (failed: boolean) => void): AsyncGenerator<unknown> {
  let last: unknown;
  try {
    for await (const event of events) {
      last = event;
      yield event;
    }
  } finally {
    observe(last instanceof NamedEvent || responseFailed(last));
  }
}
