import * as z from "zod";
import type { Clock } from "../../clock.ts";
import type { HttpRequest } from "../../http/exchange.ts";
import type { HttpServer } from "../../http/server.ts";
import { parseRequest } from "../../http/validate.ts";
import { LicenseId } from "../../protocol/license.ts";
import {
  DEFAULT_INSTANCES_LIMIT,
  DEFAULT_SILENT_AFTER_MS,
  describeInstances,
  type InstanceStore,
  type InstanceView,
} from "../instances.ts";

export const ADMIN_INSTANCES_PATH = "/v1/admin/instances";

export interface InstanceRoutesDeps {
  store: InstanceStore;
  now: Clock;
  /** `admin.silentAfter`: an instance not seen for this long is `silent`. */
  silentAfterMs?: number;
  /** The admin listener's X-Api-Key check (throws its 401), run before the handler. */
  authorize?: (request: HttpRequest) => unknown;
}

/** `GET /v1/admin/instances` answers this. */
export interface InstancesAnswer {
  instances: InstanceView[];
  /** How many instances there are in all (of the license, if one): more than listed when there are further pages. */
  total: number;
  limit: number;
  offset: number;
}

/** The largest page: 10,000 rows are about 2 MB of JSON. */
const MAX_LIMIT = 10_000;

/** Query values are text: a page's size and start as whole numbers, in range. */
const Count = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, "expected a whole number")
    .transform(Number)
    .pipe(z.number().min(min).max(max));

const InstancesQuery = z.strictObject({
  license: LicenseId.optional(),
  limit: Count(1, MAX_LIMIT).default(DEFAULT_INSTANCES_LIMIT),
  offset: Count(0, Number.MAX_SAFE_INTEGER).default(0),
});

/**
 * `GET /v1/admin/instances[?license=ID][&limit=N][&offset=N]`: the sidecar instances the beacon has heard from (or
 * one license's), most recently seen first, each `active` or `silent`; a page of at most `limit` (500 unless asked,
 * 10,000 at most) from `offset`, and the `total`. For the admin listener only: never the public one.
 */
export function registerInstanceRoutes(server: HttpServer, deps: InstanceRoutesDeps): void {
  const silentAfterMs = deps.silentAfterMs ?? DEFAULT_SILENT_AFTER_MS;
  server.get(
    ADMIN_INSTANCES_PATH,
    async (request): Promise<InstancesAnswer> => {
      const query = parseRequest(InstancesQuery, { ...request.query }, "query");
      const { limit, offset } = query;
      const page = await describeInstances(deps.store, { licenseId: query.license, limit, offset, now: deps.now(), silentAfterMs });
      return { instances: page.instances, total: page.total, limit, offset };
    },
    deps.authorize ? { authorize: deps.authorize } : {},
  );
}
