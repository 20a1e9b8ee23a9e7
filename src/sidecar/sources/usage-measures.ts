import { Answer } from "../../http/exchange.ts";
import type { HttpServer } from "../../http/server.ts";
import { parseRequest } from "../../http/validate.ts";
import { UsageMeasures } from "../../protocol/usage-snapshot.ts";
import { isDiskFull, type DataDirSpace } from "../storage/disk-space.ts";
import type { PushedMeasures } from "../usage/measures-source.ts";

/**
 * POST /v1/usage/measures: the instance pushes its current aggregate counts (the twelve UsageMeasures, nothing
 * else: 422 naming the field otherwise). Kept for the next snapshot only when usage reporting is on and the
 * source is `push`; otherwise answered `stored: false`, so the instance need not know the sidecar's config.
 */
export function registerUsageMeasuresSource(app: HttpServer, pushed: PushedMeasures | undefined, space: DataDirSpace): void {
  app.post(
    "/v1/usage/measures",
    (request) => {
      const measures = parseRequest(UsageMeasures, request.body);
      try {
        pushed?.store(measures);
      } catch (err) {
        if (!isDiskFull(err)) throw err;
        throw space.full("these counts");
      }
      return new Answer(202, { stored: pushed !== undefined });
    },
    // Usage is owed like billing: its bodies share the billing budget, which telemetry cannot take.
    { budget: "billing" },
  );
}
