import { context, SpanKind, SpanStatusCode, trace, type Tracer } from "@opentelemetry/api";
import * as z from "zod";
import { HttpError } from "../errors.ts";
import { Answer, EventStream, type HttpRequest } from "../http/exchange.ts";
import type { HttpServer } from "../http/server.ts";
import { parseRequest, RequestValidationError } from "../http/validate.ts";
import { RpcErrorCode, type Task } from "../protocol/a2a.ts";
import { agentCard } from "./agent-card.ts";
import type { Assistant } from "./graph-config.ts";
import { dispatch, parseRpcRequest, requestIdOf, rpcError, rpcResult, taskFailed } from "./rpc.ts";
import { RpcError } from "./rpc-error.ts";
import type { AgentServerSettings } from "./server.ts";
import type { A2aRequestObservation, SidecarReporter } from "./sidecar-reporter.ts";
import type { TaskRunner } from "./task-runner.ts";
import { THREAD_ID_ATTRIBUTE, threadIdOf } from "./thread-id.ts";

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
  const baseUrl = (request: HttpRequest) =>
    ctx.settings.publicUrl ?? `http://${request.headers.host ?? `${ctx.settings.listen.host}:${ctx.settings.listen.port}`}`;
  const card = (assistantId: string, request: HttpRequest) => {
    const assistant = ctx.byId.get(assistantId);
    if (!assistant)
      throw new HttpError(
        "EGRESS_ERR_ASSISTANT_NOT_FOUND",
        `no assistant ${assistantId}; graph.json names ${ctx.settings.graphs.assistants.map((a) => a.graphId).join(", ")}`,
      );
    return agentCard(assistant, assistantId, baseUrl(request).replace(/\/+$/, ""));
  };
  const CardQuery = z.looseObject({ assistant_id: z.string().min(1, { message: "Field required" }) });
  server.get("/.well-known/agent-card.json", (request) => card(parseRequest(CardQuery, request.query, "query").assistant_id, request));
  server.get("/a2a/{assistant_id}/.well-known/agent-card.json", (request) => card(request.params.assistant_id!, request));
  server.post("/a2a/{assistant_id}", (request) => serveRpc(request, ctx), { body: "json", errors: rpcBodyError });
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
  try {
    const rpc = parseRpcRequest(request.body);
    observation.method = rpc.method;
    span.updateName(`a2a ${rpc.method}`);
    span.setAttribute("rpc.method", rpc.method);
    const contextId = (rpc.params as { message?: { contextId?: unknown } } | undefined)?.message?.contextId;
    const threadId = threadIdOf(rpc) ?? (typeof contextId === "string" ? contextId : undefined);
    if (threadId !== undefined) span.setAttribute(THREAD_ID_ATTRIBUTE, threadId);
    const outcome = await dispatch(rpc, assistant, runner, { threadId, parent: trace.setSpan(context.active(), span) });
    if (outcome instanceof EventStream) return new EventStream(observed(outcome.events, observe));
    observe(taskFailed(outcome.result));
    return rpcResult(rpc.id, outcome.result);
  } catch (err) {
    let error = err;
    if (!(error instanceof RpcError)) {
      request.log.error({ err }, "A2A request failed");
      error = new RpcError(RpcErrorCode.internalError, "Internal error; see the agent server log");
    }
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as RpcError).message });
    observe(true);
    return new Answer((error as RpcError).httpStatus, rpcError(id, error as RpcError));
  } finally {
    span.end();
  }
}

/** A stream's responses, observed once it ends: failed when its final task state is. */
async function* observed(events: AsyncIterable<unknown>, observe: (failed: boolean) => void): AsyncGenerator<unknown> {
  let last: unknown;
  try {
    for await (const event of events) {
      last = event;
      yield event;
    }
  } finally {
    const status = (last as { result?: { status?: Task["status"] } } | undefined)?.result?.status;
    observe(status?.state === "failed");
  }
}
