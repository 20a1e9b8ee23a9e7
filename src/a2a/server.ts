import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { Closers } from "../closers.ts";
import type { ListenAddress } from "../config/units.ts";
import { HttpServer } from "../http/server.ts";
import { defaultEventStreamLimits } from "../http/sse-writer.ts";
import type { Task } from "../protocol/a2a.ts";
import type { Assistant, GraphConfig } from "./graph-config.ts";
import { textParts } from "./messages.ts";
import { SidecarReporter } from "./sidecar-reporter.ts";
import { TaskRunner } from "./task-runner.ts";
import type { TaskStore } from "./task-store.ts";
import { fenceCheckpointer } from "./fenced-checkpointer.ts";
import { openPersistence, type Persistence } from "./persistence.ts";
import { ReplicaWatch } from "./replica-watch.ts";
import { createTracing, type Tracing, type TracingSettings } from "./tracing.ts";
import { announceHealth } from "../health-file.ts";
import { registerA2aRoutes } from "./rpc-route.ts";

const BODY_LIMIT = 10 * 1024 * 1024;
/** A stopping server lets running tasks finish for this long, then cancels them (a pod's grace period is 30 s). */
const STOP_GRACE_MS = 10_000;

export interface AgentServerSettings {
  graphs: GraphConfig;
  listen: ListenAddress;
  /** Holds threads.db (the LangGraph checkpointer) and tasks.db (A2A tasks, unreported run counts). */
  dataDir: string;
  /** PostgreSQL (the LangGraph convention's DATABASE_URI) for conversations and tasks; without it, SQLite in dataDir. */
  databaseUri?: string | undefined;
  /** The PostgreSQL schema of its tables (default public): one per deployment when several share a database. */
  databaseSchema?: string | undefined;
  /** Replicas on PostgreSQL: one silent this long is taken for dead, and its unfinished tasks fail (default 30 s). */
  replicaTimeoutMs?: number | undefined;
  /** A quiet message/stream or tasks/resubscribe stream gets a `: keep-alive` comment this often (default 15 s). */
  streamHeartbeatMs?: number | undefined;
  /** A stream reader that takes nothing this long is dropped (default 60 s; it can resubscribe). */
  streamStalledMs?: number | undefined;
  /** The base URL the agent cards name; by default the Host the caller used. */
  publicUrl?: string | undefined;
  sidecar?: { url: string; tenantId: string; organizationId: string; intervalMs: number } | undefined;
  tracing?: TracingSettings | undefined;
  logger: Logger;
  now?: Clock;
}

export interface AgentServer {
  url: string;
  close(): Promise<void>;
}

/**
 * The agent server: each graph of graph.json as an A2A assistant (POST /a2a/{assistant_id}, JSON-RPC 2.0 with
 * SSE for message/stream), its agent card, and a health route. Threads are kept by LangGraph's SQLite
 * checkpointer, tasks by the task store; runs are reported to the egress sidecar when one is configured. Each part
 * registers its closer as it starts: a start that fails at any step (the database, the port taken) closes what it
 * had opened, and close() runs every closer even when one throws.
 */
export async function startAgentServer(settings: AgentServerSettings): Promise<AgentServer> {
  const { logger, graphs } = settings;
  const now = settings.now ?? Date.now;
  mkdirSync(settings.dataDir, { recursive: true });
  const replicaTimeoutMs = settings.replicaTimeoutMs ?? 30_000;
  const closers = new Closers();
  const { url, engine } = await closers.starting(async () => {
    const persistence = await openPersistence({ ...settings, intervalMs: settings.sidecar?.intervalMs ?? 60_000, replicaTimeoutMs });
    closers.add(() => persistence.close());
    const { store } = persistence;
    const tracing = createTracing(settings.tracing);
    closers.add(() => tracing.shutdown());
    const reporter =
      settings.sidecar &&
      new SidecarReporter({ ...settings.sidecar, sidecarUrl: settings.sidecar.url.replace(/\/+$/, ""), store, logger, now });
    // Closed after the requests and runs (closers run in reverse): its last report counts them all.
    if (reporter) closers.add(() => reporter.stop());
    const runner = new TaskRunner({ store, bus: persistence.bus, tracer: tracing.tracer, logger, now, sessionId: (a) => a.uuid });
    // A run writes its thread's checkpoints only while it holds its lease (a stalled replica's run would overwrite the turn
    // another replica ran meanwhile).
    const checkpointer = fenceCheckpointer(persistence.checkpointer, {
      store,
      leaseOf: (id) => runner.leaseOf(id),
      lost: (l) => runner.lost(l),
    });
    for (const assistant of graphs.assistants) assistant.graph.checkpointer = checkpointer;
    // One process fails at start what its last stop left running; replicas fail a silent replica's tasks as they go,
    // and each learns at its heartbeat which of its own runs another took over (it stalled), and stops them.
    if (persistence.engine === "postgresql") {
      const watch = new ReplicaWatch({ store, timeoutMs: replicaTimeoutMs, failed: interrupted(now), runs: runner, logger, now });
      closers.add(() => watch.stop());
      await watch.start();
    } else {
      await failInterrupted(store, settings, now);
    }
    const server = agentServerRoutes(settings, { persistence, runner, tracing, reporter });
    const url = await server.listen(settings.listen);
    reporter?.start();
    closers.add(async () => {
      const closed = server.close();
      try {
        await runner.stop(STOP_GRACE_MS);
      } finally {
        await closed;
      }
    });
    return { url, engine: persistence.engine };
  });
  logger.info(
    {
      url,
      assistants: graphs.assistants.map((a) => ({ graph_id: a.graphId, assistant_id: a.uuid })),
      a2a: !graphs.disableA2a,
      sidecar: settings.sidecar?.url ?? null,
      tracing: settings.tracing !== undefined,
      database: engine,
    },
    "agent server listening",
  );
  announceHealth(url, "/ok", logger);
  return { url, close: () => closers.closeAll() };
}

/** The HTTP server: health and readiness, and the A2A routes of each assistant. */
function agentServerRoutes(
  settings: AgentServerSettings,
  parts: { persistence: Persistence; runner: TaskRunner; tracing: Tracing; reporter: SidecarReporter | undefined },
): HttpServer {
  const server = new HttpServer({
    logger: settings.logger,
    bodyLimit: { bytes: BODY_LIMIT },
    eventStreams: {
      heartbeatMs: settings.streamHeartbeatMs ?? defaultEventStreamLimits.heartbeatMs,
      stalledMs: settings.streamStalledMs ?? defaultEventStreamLimits.stalledMs,
    },
  });
  const health = () => ({ ok: true });
  server.get("/ok", health, { reserved: true, quiet: true });
  server.get("/healthz", health, { reserved: true, quiet: true });
  // Liveness stays 200 while the database is away (a restart would not bring it back); readiness does not.
  const ready = async () => {
    await parts.persistence.ready();
    return { ready: true };
  };
  server.get("/readyz", ready, { reserved: true, quiet: true });
  const { graphs } = settings;
  if (!graphs.disableA2a) {
    const byId = new Map<string, Assistant>();
    for (const assistant of graphs.assistants) byId.set(assistant.graphId, assistant).set(assistant.uuid, assistant);
    registerA2aRoutes(server, { settings, byId, runner: parts.runner, tracer: parts.tracing.tracer, reporter: parts.reporter });
  }
  return server;
}

/** Tasks the last stop left running are failed, with a message saying so. */
async function failInterrupted(store: TaskStore, settings: AgentServerSettings, now: Clock): Promise<void> {
  const count = await store.failUnfinished(interrupted(now), now());
  if (count > 0) settings.logger.warn({ tasks: count }, "tasks left running by the last stop are failed");
}

/** A task whose run is gone (its server stopped or died), as it ends: failed, saying so. */
function interrupted(now: Clock): (task: Task) => Task {
  return (task): Task => {
    const message = {
      kind: "message" as const,
      role: "agent" as const,
      messageId: randomUUID(),
      contextId: task.contextId,
      taskId: task.id,
      parts: textParts("The agent server stopped while this task ran; send the message again."),
    };
    return {
      ...task,
      status: { state: "failed", message, timestamp: new Date(now()).toISOString() },
      history: [...(task.history ?? []), message],
    };
  };
}
