import { Answer } from "../../http/exchange.ts";
import type { HttpServer } from "../../http/server.ts";
import { parseRequest } from "../../http/validate.ts";
import { AuditQuery } from "../../protocol/audit.ts";
import type { AgentStatus } from "../../protocol/local-api.ts";
import type { AuditLog } from "../audit.ts";
import type { AgentMetrics } from "./metrics.ts";

/** The routes an operator and Kubernetes read: status, audit, Prometheus metrics, probes. */
export function registerOperatorRoutes(
  app: HttpServer,
  parts: {
    status: () => AgentStatus;
    audit: AuditLog;
    metrics: AgentMetrics;
    ready: () => boolean;
    /** Why the sidecar cannot keep its promise until restarted (the outbox's disk failed a write), or undefined. */
    failure: () => string | undefined;
  },
): void {
  app.get("/v1/status", () => parts.status());
  app.get("/v1/audit", async (request) => parts.audit.list(parseRequest(AuditQuery, request.query, "query")));
  app.get("/metrics", async () => new Answer(200, await parts.metrics.registry.metrics(), parts.metrics.registry.contentType), {
    reserved: true,
  });
  // Probes, /metrics and billing intake are served from the connection reserve: a crowd of other clients never fails them.
  // A failure only a restart cures fails the liveness probe too: Kubernetes then restarts the container.
  app.get(
    "/healthz",
    () => {
      const failure = parts.failure();
      return failure === undefined ? { status: "ok" } : new Answer(503, { status: "failing", reason: failure });
    },
    { reserved: true },
  );
  app.get("/readyz", () => (parts.ready() && parts.failure() === undefined ? { ready: true } : new Answer(503, { ready: false })), {
    reserved: true,
  });
}
