import type { FastifyInstance } from "fastify";
import { parseRequest } from "../../http/validate.ts";
import { UsageMeasures } from "../../protocol/usage-snapshot.ts";
import type { PushedMeasures } from "../usage/measures-source.ts";

/**
 * POST /v1/usage/measures: the instance pushes its current aggregate counts (the seed's measures, nothing
 * else: 422 naming the field otherwise). Kept for the next snapshot only when usage reporting is on and the
 * source is `push`; otherwise answered `stored: false`, so the instance need not know the sidecar's config.
 */
export function registerUsageMeasuresSource(app: FastifyInstance, pushed: PushedMeasures | undefined): void {
  app.post("/v1/usage/measures", async (request, reply) => {
    const measures = parseRequest(UsageMeasures, request.body);
    pushed?.store(measures);
    reply.code(202);
    return { stored: pushed !== undefined };
  });
}
