import * as z from "zod";
import { MAX_INT32, Timestamp, Uuid } from "./common.ts";
import { LicenseId } from "./license.ts";

// The beacon's admin API (its admin listener): one schema per wire shape, used by the routes and `beacon licenses`.

export const adminPaths = {
  licenses: "/v1/admin/licenses",
  license: "/v1/admin/licenses/{id}",
  revoke: "/v1/admin/licenses/{id}/revoke",
  rotateKey: "/v1/admin/licenses/{id}/rotate-key",
  usage: "/v1/admin/usage",
  audit: "/v1/admin/audit",
  usageSnapshots: "/v1/admin/usage-snapshots",
  offlineImports: "/v1/admin/offline-imports",
} as const;

/** A path with `{id}` filled in (encoded). */
export const licensePath = (path: string, id: string) => path.replace("{id}", encodeURIComponent(id));

const Seats = z.int({ message: "must be an integer" }).nonnegative({ message: "must not be negative" }).max(MAX_INT32);

export const LicenseCreate = z.strictObject({
  id: LicenseId,
  organizationId: Uuid,
  expiresAt: Timestamp,
  seats: Seats,
  offlineAllowed: z.boolean().default(false),
});
export type LicenseCreate = z.output<typeof LicenseCreate>;

/** A renewal: a new expiry, a new seat count, or both. */
export const LicensePatch = z
  .strictObject({ expiresAt: Timestamp.optional(), seats: Seats.optional() })
  .refine((patch) => patch.expiresAt !== undefined || patch.seats !== undefined, { message: "give expiresAt or seats (or both)" });
export type LicensePatch = z.output<typeof LicensePatch>;

export const LicenseIdParams = z.strictObject({ id: LicenseId });

export const LicenseState = z.enum(["active", "expiring", "expired", "revoked"]);

/** One license in the list. `instances`: how many instances reported with it. */
export const LicenseSummary = z.object({
  id: z.string(),
  organizationId: z.string(),
  expiresAt: z.string(),
  seats: z.int(),
  offlineAllowed: z.boolean(),
  state: LicenseState,
  lastVerifiedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  instances: z.int(),
});
export type LicenseSummary = z.infer<typeof LicenseSummary>;

export const LicenseList = z.object({ licenses: z.array(LicenseSummary) });
export type LicenseList = z.infer<typeof LicenseList>;

/** A license as created or changed: no key (that is shown once, by create and rotate-key). */
export const LicenseView = LicenseSummary.extend({ createdAt: z.string(), updatedAt: z.string() });
export type LicenseView = z.infer<typeof LicenseView>;

/** 201 of create: the license and its key, which is never shown again. */
export const LicenseCreated = LicenseView.extend({ key: z.string() });
export type LicenseCreated = z.infer<typeof LicenseCreated>;

export const RotatedKey = z.object({ key: z.string() });

/** Trace transactions and traces of one month. */
export const MonthlyUsage = z.object({ month: z.string(), transactions: z.number(), traces: z.number() });

/** One license with its instances and its usage by month. */
export const LicenseDetail = LicenseView.omit({ instances: true }).extend({
  instances: z.array(z.record(z.string(), z.unknown())),
  usage: z.array(MonthlyUsage),
});
export type LicenseDetail = z.infer<typeof LicenseDetail>;

const Month = z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/, { message: "must be YYYY-MM" });

export const UsageQuery = z.strictObject({ license: LicenseId.optional(), month: Month.optional() });

/** A row of the billing report (`beacon report --json`). */
export const UsageRow = z.object({
  month: z.string(),
  license_id: z.string(),
  organization_id: z.string(),
  transactions: z.number(),
  traces: z.number(),
});
export const UsageRows = z.array(UsageRow);

export const UsageSnapshotsQuery = z.strictObject({
  license: LicenseId.optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

/** A usage snapshot as the admin API shows it: whose, its window, its measures. */
export const UsageSnapshotView = z.object({
  licenseId: z.string(),
  fromTimestamp: z.string(),
  toTimestamp: z.string(),
  measures: z.record(z.string(), z.unknown()),
});
export type UsageSnapshotView = z.infer<typeof UsageSnapshotView>;

export const AuditQuery = z.strictObject({
  license: LicenseId.optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

/** What an admin did: `actor` names the admin key by its fingerprint (`key:` and 8 hex digits), or `config`. */
export const AuditRecord = z.object({
  at: z.string(),
  actor: z.string(),
  action: z.string(),
  licenseId: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()),
});
export type AuditRecord = z.infer<typeof AuditRecord>;

export const AuditList = z.object({ records: z.array(AuditRecord) });

/** `POST /v1/admin/offline-imports?license=`: whose records a file is when its header names no license. */
export const OfflineImportQuery = z.strictObject({ license: LicenseId.optional() });

/**
 * The largest export file one import takes: 512 MiB, about 1.1 million records of some 480 bytes. A larger one is
 * imported in parts, each its header line and some of its records: each record counts once whichever part brings it.
 */
export const OFFLINE_IMPORT_MAX_BYTES = 512 * 1024 * 1024;

/** 200 of an import: records new to the beacon, and those it had already (from this file before, or online). */
export const OfflineImportResult = z.object({ imported: z.int().nonnegative(), duplicates: z.int().nonnegative() });
export type OfflineImportResult = z.infer<typeof OfflineImportResult>;
