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
  parts: { status: () => AgentStatus; audit: AuditLog; metrics: AgentMetrics; ready: () => boolean },
): void {
  app.get("/v1/status", () => parts.status());
  app.get("/v1/audit", async (request) => parts.audit.list(parseRequest(AuditQuery, request.query, "query")));
  app.get("/metrics", async () => new Answer(200, await parts.metrics.registry.metrics(), parts.metrics.registry.contentType), {
    reserved: true,
  });
  // Probes, /metrics and billing intake are served from the connection reserve: a crowd of other clients never fails them.
  app.get("/healthz", () => ({ status: "ok" }), { reserved: true });
  app.get("/readyz", () => (parts.ready() ? { ready: true } : new Answer(503, { ready: false })), { reserved: true });
}
