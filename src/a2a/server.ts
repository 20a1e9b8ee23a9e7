import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import type { Logger } from "pino";
import * as z from "zod";
import type { ListenAddress } from "../config/units.ts";
import { HttpError } from "../errors.ts";
import { Answer, EventStream, type HttpRequest } from "../http/exchange.ts";
import { HttpServer } from "../http/server.ts";
import { parseRequest, RequestValidationError } from "../http/validate.ts";
import { RpcErrorCode, type Task } from "../protocol/a2a.ts";
import { agentCard } from "./agent-card.ts";
import type { Assistant, GraphConfig } from "./graph-config.ts";
import { textParts } from "./messages.ts";
import { dispatch, parseRpcRequest, requestIdOf, rpcError, rpcResult, taskFailed } from "./rpc.ts";
import { RpcError } from "./rpc-error.ts";
import { SidecarReporter, type A2aRequestObservation } from "./sidecar-reporter.ts";
import { TaskRunner } from "./task-runner.ts";
import { TaskStore } from "./task-store.ts";
import { THREAD_ID_ATTRIBUTE, threadIdOf } from "./thread-id.ts";
import { createTracing, type TracingSettings } from "./tracing.ts";
import { announceHealth } from "../health-file.ts";

const BODY_LIMIT = 10 * 1024 * 1024;
/** The endpoint metrics name: the route template, as the sidecar's privacy filter would make it anyway. */
const A2A_ENDPOINT = "/a2a/{assistant_id}";
/** A stopping server lets running tasks finish for this long, then cancels them (a pod's grace period is 30 s). */
const STOP_GRACE_MS = 10_000;

export interface AgentServerSettings {
  graphs: GraphConfig;
  listen: ListenAddress;
  /** Holds threads.db (the LangGraph checkpointer) and tasks.db (A2A tasks, unreported run counts). */
  dataDir: string;
  /** The base URL the agent cards name; by default the Host the caller used. */
  publicUrl?: string | undefined;
  sidecar?: { url: string; tenantId: string; organizationId: string; intervalMs: number } | undefined;
  tracing?: TracingSettings | undefined;
  logger: Logger;
  now?: () => number;
}

export interface AgentServer {
  url: string;
  close(): Promise<void>;
}

/** Errors met before the handler runs (the body), worded as JSON-RPC answers. */
function rpcBodyError(error: unknown, request: HttpRequest): Answer {
  if (error instanceof RequestValidationError) {
    return new Answer(400, rpcError(null, new RpcError(RpcErrorCode.parseError, `Invalid JSON payload: ${error.detail[0]?.msg ?? "not JSON"}`)));
  }
  if (error instanceof HttpError) return new Answer(error.statusCode, rpcError(null, new RpcError(RpcErrorCode.invalidRequest, `Invalid Request: ${error.message}`)));
  request.log.error({ err: error }, "request failed");
  return new Answer(500, rpcError(null, new RpcError(RpcErrorCode.internalError, "Internal error; see the agent server log")));
}

/**
 * The agent server: each graph of graph.json as an A2A assistant (POST /a2a/{assistant_id}, JSON-RPC 2.0 with
 * SSE for message/stream), its agent card, and a health route. Threads are kept by LangGraph's SQLite
 * checkpointer, tasks by the task store; runs are reported to the egress sidecar when one is configured.
 */
export async function startAgentServer(settings: AgentServerSettings): Promise<AgentServer> {
  const { logger, graphs } = settings;
  const now = settings.now ?? Date.now;
  mkdirSync(settings.dataDir, { recursive: true });
  const checkpointer = SqliteSaver.fromConnString(join(settings.dataDir, "threads.db"));
  for (const assistant of graphs.assistants) assistant.graph.checkpointer = checkpointer;
  const store = new TaskStore(join(settings.dataDir, "tasks.db"), settings.sidecar?.intervalMs ?? 60_000);
  const interrupted = store.failUnfinished((task): Task => {
    const message = { kind: "message" as const, role: "agent" as const, messageId: randomUUID(), contextId: task.contextId, taskId: task.id, parts: textParts("The agent server stopped while this task ran; send the message again.") };
    return { ...task, status: { state: "failed", message, timestamp: new Date(now()).toISOString() }, history: [...(task.history ?? []), message] };
  }, now());
  if (interrupted > 0) logger.warn({ tasks: interrupted }, "tasks left running by the last stop are failed");
  const tracing = createTracing(settings.tracing);
  const reporter = settings.sidecar && new SidecarReporter({ ...settings.sidecar, sidecarUrl: settings.sidecar.url.replace(/\/+$/, ""), store, logger, now });
  const runner = new TaskRunner({ store, tracer: tracing.tracer, logger, now, sessionId: (assistant) => assistant.uuid });
  const byId = new Map<string, Assistant>();
  for (const assistant of graphs.assistants) byId.set(assistant.graphId, assistant).set(assistant.uuid, assistant);

  const server = new HttpServer({ logger, bodyLimit: { bytes: BODY_LIMIT } });
  const health = () => ({ ok: true });
  server.get("/ok", health, { reserved: true, quiet: true });
  server.get("/healthz", health, { reserved: true, quiet: true });
  if (!graphs.disableA2a) {
    const baseUrl = (request: HttpRequest) => settings.publicUrl ?? `http://${request.headers.host ?? `${settings.listen.host}:${settings.listen.port}`}`;
    const card = (assistantId: string, request: HttpRequest) => {
      const assistant = byId.get(assistantId);
      if (!assistant) throw new HttpError(404, "ERR_ASSISTANT_NOT_FOUND", `no assistant ${assistantId}; graph.json names ${graphs.assistants.map((a) => a.graphId).join(", ")}`);
      return agentCard(assistant, assistantId, baseUrl(request).replace(/\/+$/, ""));
    };
    const CardQuery = z.looseObject({ assistant_id: z.string().min(1, { message: "Field required" }) });
    server.get("/.well-known/agent-card.json", (request) => card(parseRequest(CardQuery, request.query, "query").assistant_id, request));
    server.get("/a2a/{assistant_id}/.well-known/agent-card.json", (request) => card(request.params.assistant_id!, request));
    server.post("/a2a/{assistant_id}", (request) => serveRpc(request), { body: "json", errors: rpcBodyError });
  }

  async function serveRpc(request: HttpRequest): Promise<Answer | EventStream | unknown> {
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
    const span = tracing.tracer.startSpan("a2a request", { kind: SpanKind.SERVER, attributes: { "rpc.system": "jsonrpc", "platform.assistant_id": assistant.graphId } });
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

  const url = await server.listen(settings.listen);
  reporter?.start();
  logger.info({ url, assistants: graphs.assistants.map((a) => ({ graph_id: a.graphId, assistant_id: a.uuid })), a2a: !graphs.disableA2a, sidecar: settings.sidecar?.url ?? null, tracing: settings.tracing !== undefined }, "agent server listening");
  announceHealth(url, "/ok");
  return {
    url,
    async close() {
      const closed = server.close();
      await runner.stop(STOP_GRACE_MS);
      await closed;
      await reporter?.stop();
      await tracing.shutdown();
      store.close();
      checkpointer.db.close();
    },
  };
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
