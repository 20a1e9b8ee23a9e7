import type { Logger } from "pino";
import { Answer } from "../../http/exchange.ts";
import { HttpServer } from "../../http/server.ts";
import type { ListenAddress } from "../../config/units.ts";
import type { AgentMetrics } from "../local-api/metrics.ts";

/**
 * `metrics.listen`: a second listener serving GET /metrics alone, so that Prometheus can scrape the pod's address
 * while the billing and telemetry intake stays on loopback. Every other path answers 404; it takes no bodies.
 */
export async function startMetricsListener(
  address: ListenAddress,
  parts: { metrics: AgentMetrics; logger: Logger },
): Promise<{ url: string; close(): Promise<void> }> {
  const server = new HttpServer({ logger: parts.logger, bodyLimit: { bytes: 0, key: "metrics.listen" } });
  const { registry } = parts.metrics;
  server.get("/metrics", async () => new Answer(200, await registry.metrics(), registry.contentType));
  const url = await server.listen(address);
  return { url, close: () => server.close() };
}
