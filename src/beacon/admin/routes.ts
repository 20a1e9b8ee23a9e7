import type { HttpServer } from "../../http/server.ts";
import { parseRequest } from "../../http/validate.ts";
import {
  adminPaths,
  AuditQuery,
  type AuditRecord,
  UsageQuery,
  UsageSnapshotsQuery,
  type UsageSnapshotView,
} from "../../protocol/beacon-admin.ts";
import type { TraceReportRow } from "../store.ts";
import type { AdminDeps } from "./deps.ts";
import { registerImportRoutes } from "./import-routes.ts";
import { registerLicenseRoutes } from "./license-routes.ts";

/**
 * Every route of the admin listener: the licenses, the billing report and the audit log of admin actions. Each
 * needs an admin key (`authorize: deps.auth.authorize`, checked before any body); none is served on the public
 * listener. Routes of other modules (instances, imports) are registered beside these, with the same deps.
 */
export function registerAdminRoutes(app: HttpServer, deps: AdminDeps): void {
  const guarded = { authorize: deps.auth.authorize };
  registerLicenseRoutes(app, deps);
  registerImportRoutes(app, deps);

  // The billing report's rows, as `beacon report --json` prints them.
  app.get(
    adminPaths.usage,
    async (request): Promise<TraceReportRow[]> => {
      const query = parseRequest(UsageQuery, request.query, "query");
      return deps.store.traceReport({ licenseId: query.license, month: query.month });
    },
    guarded,
  );

  // The usage snapshots received (one license's, or every license's), newest first.
  app.get(
    adminPaths.usageSnapshots,
    async (request): Promise<{ snapshots: UsageSnapshotView[] }> => {
      const query = parseRequest(UsageSnapshotsQuery, request.query, "query");
      const stored = await deps.store.usageSnapshots({ licenseId: query.license, newest: query.limit });
      return {
        snapshots: stored.map((s) => ({
          licenseId: s.license_id,
          fromTimestamp: s.from_timestamp,
          toTimestamp: s.to_timestamp,
          measures: s.measures as Record<string, unknown>,
        })),
      };
    },
    guarded,
  );

  // Who did what, newest first (ours, beyond the contract's routes: docs/PROTOCOL.md, "Where we differ from the platform's documents").
  app.get(
    adminPaths.audit,
    async (request): Promise<{ records: AuditRecord[] }> => {
      const query = parseRequest(AuditQuery, request.query, "query");
      return { records: await deps.store.licenses.auditLog({ licenseId: query.license, limit: query.limit }) };
    },
    guarded,
  );
}
