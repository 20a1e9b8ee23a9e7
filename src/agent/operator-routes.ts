import type { FastifyInstance } from "fastify";
import { parseRequest } from "../http/validate.ts";
import { AuditQuery } from "../protocol/audit.ts";
import type { AgentStatus } from "../protocol/local-api.ts";
import type { AuditLog } from "./audit.ts";
import type { AgentMetrics } from "./metrics.ts";

/** The routes an operator and Kubernetes read: status, audit, Prometheus metrics, probes. */
export function registerOperatorRoutes(
  app: FastifyInstance,
  parts: { status: () => AgentStatus; audit: AuditLog; metrics: AgentMetrics; ready: () => boolean },
): void {
  app.get("/v1/status", async () => parts.status());
  app.get("/v1/audit", async (request) => parts.audit.list(parseRequest(AuditQuery, request.query, "query")));
  app.get("/metrics", async (_request, reply) => reply.type(parts.metrics.registry.contentType).send(await parts.metrics.registry.metrics()));
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (_request, reply) => (parts.ready() ? { ready: true } : reply.code(503).send({ ready: false })));
}
