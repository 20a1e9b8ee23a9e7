import * as z from "zod";
import type { HttpRequest } from "../../http/exchange.ts";
import type { HttpServer } from "../../http/server.ts";
import { parseRequest } from "../../http/validate.ts";
import { LicenseId } from "../../protocol/license.ts";
import { DEFAULT_SILENT_AFTER_MS, describeInstances, type InstanceStore, type InstanceView } from "../instances.ts";

export const ADMIN_INSTANCES_PATH = "/v1/admin/instances";

export interface InstanceRoutesDeps {
  store: InstanceStore;
  now: () => Date;
  /** `admin.silentAfter`: an instance not seen for this long is `silent`. */
  silentAfterMs?: number;
  /** The admin listener's X-Api-Key check (throws its 401), run before the handler. */
  authorize?: (request: HttpRequest) => unknown;
}

/** `GET /v1/admin/instances` answers this. */
export interface InstancesAnswer {
  instances: InstanceView[];
}

const InstancesQuery = z.strictObject({ license: LicenseId.optional() });

/**
 * `GET /v1/admin/instances[?license=ID]`: every sidecar instance the beacon has heard from (or one license's),
 * most recently seen first, each `active` or `silent`. For the admin listener only: never the public one.
 */
export function registerInstanceRoutes(server: HttpServer, deps: InstanceRoutesDeps): void {
  const silentAfterMs = deps.silentAfterMs ?? DEFAULT_SILENT_AFTER_MS;
  server.get(
    ADMIN_INSTANCES_PATH,
    async (request): Promise<InstancesAnswer> => {
      const query = parseRequest(InstancesQuery, { ...request.query }, "query");
      return { instances: await describeInstances(deps.store, { licenseId: query.license, now: deps.now(), silentAfterMs }) };
    },
    deps.authorize ? { authorize: deps.authorize } : {},
  );
}
