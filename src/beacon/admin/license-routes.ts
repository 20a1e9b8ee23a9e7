import type { Logger } from "pino";
import { HttpError } from "../../errors.ts";
import { Answer, type HttpRequest } from "../../http/exchange.ts";
import type { HttpServer } from "../../http/server.ts";
import { parseRequest } from "../../http/validate.ts";
import {
  adminPaths,
  LicenseCreate,
  type LicenseCreated,
  type LicenseDetail,
  LicenseIdParams,
  type LicenseList,
  LicensePatch,
  type LicenseView,
} from "../../protocol/beacon-admin.ts";
import { generateLicenseKey, hashLicenseKey, type LicenseRecord, licenseState } from "../licenses.ts";
import type { TraceReportRow } from "../store.ts";
import type { AdminDeps } from "./deps.ts";

/** Create, renew, revoke and rotate bodies are a few hundred bytes. */
const LICENSE_BODY_LIMIT = { bytes: 16 * 1024 };

export function licenseView(record: LicenseRecord, now: number, instances: number): LicenseView {
  return {
    id: record.id,
    organizationId: record.organizationId,
    expiresAt: record.expiresAt,
    seats: record.seats,
    offlineAllowed: record.offlineAllowed,
    state: licenseState(record, now),
    lastVerifiedAt: record.lastVerifiedAt,
    revokedAt: record.revokedAt,
    instances,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

/** A license's report rows (one per organization and month) as one total per month. */
function monthlyUsage(rows: readonly TraceReportRow[]): LicenseDetail["usage"] {
  const byMonth = new Map<string, { month: string; transactions: number; traces: number }>();
  for (const row of rows) {
    const month = byMonth.get(row.month) ?? { month: row.month, transactions: 0, traces: 0 };
    month.transactions += row.transactions;
    month.traces += row.traces;
    byMonth.set(row.month, month);
  }
  return [...byMonth.values()];
}

const idOf = (request: HttpRequest) => parseRequest(LicenseIdParams, request.params, "path").id;
const instanceCount = async (deps: AdminDeps, id: string) => (await deps.instances?.countsByLicense())?.get(id) ?? 0;

/** Who made a change, for its log line and audit record: an admin key's fingerprint (the API's, or the console's session's). */
export interface ChangedBy {
  log: Logger;
  actor: string;
}

/** The license after a change: in force here at once, logged, and read back as the database has it. */
async function afterChange(deps: AdminDeps, change: ChangedBy & { id: string; done: boolean; action: string }): Promise<LicenseRecord> {
  const { id, log, actor, action } = change;
  if (!change.done) throw new HttpError("EGRESS_ERR_LICENSE_NOT_FOUND", `no license with id ${id}`);
  log.info({ licenseId: id, actor, action }, "license changed");
  await deps.licenses.refresh();
  const record = await deps.store.licenses.get(id);
  if (!record) throw new HttpError("EGRESS_ERR_LICENSE_NOT_FOUND", `no license with id ${id}`);
  return record;
}

/** The same for a route's request: the admin key that sent it is the actor. */
const changed = (deps: AdminDeps, id: string, done: boolean, request: HttpRequest, action: string) =>
  afterChange(deps, { id, done, log: request.log, actor: deps.auth.actor(request), action });

/** A renewal (`PATCH /v1/admin/licenses/{id}`, and the console's form): audited in the same transaction. */
export async function renewLicense(deps: AdminDeps, id: string, patch: LicensePatch, by: ChangedBy): Promise<LicenseRecord> {
  const done = await deps.store.licenses.update(id, patch, by.actor, new Date(deps.now()));
  return afterChange(deps, { id, done, ...by, action: "license.update" });
}

/** A revocation (`POST .../revoke`, and the console's form): audited in the same transaction. */
export async function revokeLicense(deps: AdminDeps, id: string, by: ChangedBy): Promise<LicenseRecord> {
  const done = await deps.store.licenses.revoke(id, by.actor, new Date(deps.now()));
  return afterChange(deps, { id, done, ...by, action: "license.revoke" });
}

/** The license routes of the admin API (docs/beacon.md, "Running the beacon as a vendor"). */
export function registerLicenseRoutes(app: HttpServer, deps: AdminDeps): void {
  registerLicenseReads(app, deps);
  registerLicenseChanges(app, deps);
}

/** The list of licenses, and one license with its instances and its usage by month. */
function registerLicenseReads(app: HttpServer, deps: AdminDeps): void {
  const { store, auth, now } = deps;
  const guarded = { authorize: auth.authorize };
  app.get(
    adminPaths.licenses,
    async (): Promise<LicenseList> => {
      const counts = await deps.instances?.countsByLicense();
      const at = now();
      const records = await store.licenses.all();
      return {
        licenses: records.map((record) => {
          const { createdAt: _c, updatedAt: _u, ...summary } = licenseView(record, at, counts?.get(record.id) ?? 0);
          return summary;
        }),
      };
    },
    guarded,
  );
  app.get(
    adminPaths.license,
    async (request): Promise<LicenseDetail> => {
      const id = idOf(request);
      const record = await store.licenses.get(id);
      if (!record) throw new HttpError("EGRESS_ERR_LICENSE_NOT_FOUND", `no license with id ${id}`);
      const instances = (await deps.instances?.forLicense(id)) ?? [];
      return { ...licenseView(record, now(), 0), instances, usage: monthlyUsage(await store.traceReport({ licenseId: id })) };
    },
    guarded,
  );
}

/** Create, renew, revoke and re-key: each audited, each in force on every replica within seconds. */
function registerLicenseChanges(app: HttpServer, deps: AdminDeps): void {
  const { store, auth, now } = deps;
  const withBody = { authorize: auth.authorize, bodyLimit: LICENSE_BODY_LIMIT };
  app.post(
    adminPaths.licenses,
    async (request): Promise<Answer> => {
      const body = parseRequest(LicenseCreate, request.body);
      const key = generateLicenseKey();
      const record = { ...body, keySha256: hashLicenseKey(key), revokedAt: null, keyRotatedAt: null };
      const created = await store.licenses.create(record, auth.actor(request), new Date(now()));
      if (!created) throw new HttpError("EGRESS_ERR_LICENSE_EXISTS", `a license with id ${body.id} exists already`);
      const stored = await changed(deps, body.id, true, request, "license.create");
      return new Answer(201, { ...licenseView(stored, now(), 0), key } satisfies LicenseCreated);
    },
    withBody,
  );
  app.patch(
    adminPaths.license,
    async (request): Promise<LicenseView> => {
      const id = idOf(request);
      const patch = parseRequest(LicensePatch, request.body);
      const record = await renewLicense(deps, id, patch, { log: request.log, actor: auth.actor(request) });
      return licenseView(record, now(), await instanceCount(deps, id));
    },
    withBody,
  );
  app.post(
    adminPaths.revoke,
    async (request): Promise<LicenseView> => {
      const id = idOf(request);
      const record = await revokeLicense(deps, id, { log: request.log, actor: auth.actor(request) });
      return licenseView(record, now(), await instanceCount(deps, id));
    },
    { ...withBody, body: "none" },
  );
  app.post(
    adminPaths.rotateKey,
    async (request): Promise<{ key: string }> => {
      const id = idOf(request);
      const key = generateLicenseKey();
      const done = await store.licenses.rotateKey(id, hashLicenseKey(key), auth.actor(request), new Date(now()));
      await changed(deps, id, done, request, "license.rotate-key");
      return { key };
    },
    { ...withBody, body: "none" },
  );
}
