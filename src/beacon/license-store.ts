import { ConfigError } from "../errors.ts";
import type { AuditRecord } from "../protocol/beacon-admin.ts";
import type { BeaconLicenseConfig } from "./config.ts";
import { configLicenseFields, type LicenseRecord } from "./licenses.ts";
import { type SqlExecutor, type Statement, uniqueViolation } from "./sql-executor.ts";

/**
 * The licenses, their version and the admin audit log, in either engine's types. `license_version` goes up with
 * every change that matters to authentication, so a replica polls one number to know its cache is stale;
 * `config_fields` is the beacon.yaml entry a row was last written from, its key hashed (null: made through the admin
 * API): a start writes only what the file changed since, so a renewal or a new key made through the API stays.
 */
export function licenseTablesSql(engine: "sqlite" | "postgresql"): string {
  const seq = engine === "sqlite" ? "seq INTEGER PRIMARY KEY" : "seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY";
  return `
CREATE TABLE IF NOT EXISTS licenses (
  id text PRIMARY KEY,
  organization_id text NOT NULL,
  expires_at text NOT NULL,
  seats integer NOT NULL,
  offline_allowed integer NOT NULL,
  key_sha256 text NOT NULL UNIQUE,
  revoked_at text,
  key_rotated_at text,
  created_at text NOT NULL,
  updated_at text NOT NULL,
  last_verified_at text,
  config_fields text
);
CREATE TABLE IF NOT EXISTS license_version (one integer PRIMARY KEY CHECK (one = 1), version bigint NOT NULL);
INSERT INTO license_version (one, version) VALUES (1, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS admin_audit (
  ${seq},
  at text NOT NULL,
  actor text NOT NULL,
  action text NOT NULL,
  license_id text,
  detail text NOT NULL
);
`;
}

/** Who did what, written with the change itself; `detail` never holds a key. */
export interface AuditEntry {
  actor: string;
  action: string;
  licenseId: string | null;
  detail: Record<string, unknown>;
}

const COLUMNS = `id AS "id", organization_id AS "organizationId", expires_at AS "expiresAt", seats AS "seats",
  offline_allowed AS "offlineAllowed", key_sha256 AS "keySha256", revoked_at AS "revokedAt", key_rotated_at AS "keyRotatedAt",
  created_at AS "createdAt", updated_at AS "updatedAt", last_verified_at AS "lastVerifiedAt"`;

type Row = Omit<LicenseRecord, "offlineAllowed"> & { offlineAllowed: number };
const record = (row: Row): LicenseRecord => ({ ...row, seats: Number(row.seats), offlineAllowed: Boolean(row.offlineAllowed) });

/** The fields a beacon.yaml entry sets, and their columns. */
const CONFIG_COLUMNS = {
  organizationId: "organization_id",
  expiresAt: "expires_at",
  seats: "seats",
  offlineAllowed: "offline_allowed",
  keySha256: "key_sha256",
} as const;

const BUMP: Statement = { sql: "UPDATE license_version SET version = version + 1", params: [] };

/** The licenses in the beacon's database, shared by every replica on it. */
export class LicenseStore {
  readonly #sql: SqlExecutor;

  constructor(sql: SqlExecutor) {
    this.#sql = sql;
  }

  #audit(entry: AuditEntry, at: Date): Statement {
    return {
      sql: "INSERT INTO admin_audit (at, actor, action, license_id, detail) VALUES (?, ?, ?, ?, ?)",
      params: [at.toISOString(), entry.actor, entry.action, entry.licenseId, JSON.stringify(entry.detail)],
    };
  }

  /** Goes up with every change to a license's key, state, expiry or seats. */
  async version(): Promise<number> {
    const rows = await this.#sql.all<{ version: number | string }>("SELECT version FROM license_version");
    return Number(rows[0]?.version ?? 0);
  }

  async all(): Promise<LicenseRecord[]> {
    return (await this.#sql.all<Row>(`SELECT ${COLUMNS} FROM licenses ORDER BY id`)).map(record);
  }

  async get(id: string): Promise<LicenseRecord | undefined> {
    const rows = await this.#sql.all<Row>(`SELECT ${COLUMNS} FROM licenses WHERE id = ?`, [id]);
    return rows[0] && record(rows[0]);
  }

  /** A new license; false when its id is taken. */
  async create(license: Omit<LicenseRecord, "createdAt" | "updatedAt" | "lastVerifiedAt">, actor: string, now: Date): Promise<boolean> {
    const at = now.toISOString();
    const { id, organizationId, expiresAt, seats, offlineAllowed } = license;
    return this.#sql.batch([
      {
        sql: `INSERT INTO licenses (id, organization_id, expires_at, seats, offline_allowed, key_sha256, revoked_at, key_rotated_at,
                created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?) ON CONFLICT (id) DO NOTHING`,
        params: [id, organizationId, expiresAt, seats, offlineAllowed ? 1 : 0, license.keySha256, at, at],
        required: true,
      },
      this.#audit({ actor, action: "license.create", licenseId: id, detail: { organizationId, expiresAt, seats, offlineAllowed } }, now),
      BUMP,
    ]);
  }

  /** A renewal; false when there is no such license. */
  async update(
    id: string,
    patch: { expiresAt?: string | undefined; seats?: number | undefined },
    actor: string,
    now: Date,
  ): Promise<boolean> {
    const at = now.toISOString();
    return this.#sql.batch([
      {
        sql: "UPDATE licenses SET expires_at = coalesce(?, expires_at), seats = coalesce(?, seats), updated_at = ? WHERE id = ?",
        params: [patch.expiresAt ?? null, patch.seats ?? null, at, id],
        required: true,
      },
      this.#audit({ actor, action: "license.update", licenseId: id, detail: { ...patch } }, now),
      BUMP,
    ]);
  }

  /** Revokes for good (again: the first revocation's time stays); false when there is no such license. */
  async revoke(id: string, actor: string, now: Date): Promise<boolean> {
    const at = now.toISOString();
    return this.#sql.batch([
      {
        sql: "UPDATE licenses SET revoked_at = coalesce(revoked_at, ?), updated_at = ? WHERE id = ?",
        params: [at, at, id],
        required: true,
      },
      this.#audit({ actor, action: "license.revoke", licenseId: id, detail: {} }, now),
      BUMP,
    ]);
  }

  /** Replaces the key's hash; false when there is no such license. */
  async rotateKey(id: string, keySha256: string, actor: string, now: Date): Promise<boolean> {
    const at = now.toISOString();
    return this.#sql.batch([
      {
        sql: "UPDATE licenses SET key_sha256 = ?, key_rotated_at = ?, updated_at = ? WHERE id = ?",
        params: [keySha256, at, at, id],
        required: true,
      },
      this.#audit({ actor, action: "license.rotate-key", licenseId: id, detail: {} }, now),
      BUMP,
    ]);
  }

  /**
   * beacon.yaml's `licenses:` at start: an entry new or changed in the file since it was last applied is written
   * (upserted by id, its key hashed); one unchanged is not, so what the admin API did to it since (a renewal, a
   * rotated key) stays. A revocation stays whatever the file says. Replicas starting together apply each once.
   */
  async applyConfig(entries: readonly BeaconLicenseConfig[], now: Date): Promise<void> {
    for (const [i, entry] of entries.entries()) {
      const fields = configLicenseFields(entry);
      const owner = await this.#applyOrFindOwner(fields, now);
      if (owner === undefined) continue;
      const form = entry.key === undefined ? "keySha256" : "key";
      throw new ConfigError("beacon config", [
        `licenses[${i}].${form}: the same key as license ${owner} in the database: each license needs a key of its own`,
      ]);
    }
  }

  /**
   * Applies an entry; on a unique violation, the id of the license that holds its key. A violation on the entry's
   * own id or key is a replica starting at the same moment that inserted it first: it is applied again over that row.
   */
  async #applyOrFindOwner(fields: ReturnType<typeof configLicenseFields>, now: Date): Promise<string | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#applyEntry(fields, now);
        return undefined;
      } catch (err) {
        if (!uniqueViolation(err)) throw err;
        const [owner] = await this.#sql.all<{ id: string }>("SELECT id FROM licenses WHERE key_sha256 = ?", [fields.keySha256]);
        if (attempt > 0 || (owner !== undefined && owner.id !== fields.id)) return owner?.id ?? "(another)";
      }
    }
  }

  /**
   * One beacon.yaml entry: a new license inserted; a known one given only the fields the file changed since it last
   * wrote them (a seat count edited in the file does not bring back a key replaced through the API).
   */
  async #applyEntry(fields: ReturnType<typeof configLicenseFields>, now: Date): Promise<void> {
    const at = now.toISOString();
    const { id, organizationId, expiresAt, seats, offlineAllowed, keySha256 } = fields;
    const [row] = await this.#sql.all<{ config_fields: string | null }>("SELECT config_fields FROM licenses WHERE id = ?", [id]);
    const last: Partial<typeof fields> = row?.config_fields ? JSON.parse(row.config_fields) : {};
    const changed = (Object.keys(CONFIG_COLUMNS) as (keyof typeof CONFIG_COLUMNS)[]).filter((field) => last[field] !== fields[field]);
    if (row && changed.length === 0) return;
    const value = (field: keyof typeof CONFIG_COLUMNS) => (field === "offlineAllowed" ? (fields.offlineAllowed ? 1 : 0) : fields[field]);
    const write: Statement = row
      ? {
          sql: `UPDATE licenses SET ${changed.map((field) => `${CONFIG_COLUMNS[field]} = ?`).join(", ")},
                  key_rotated_at = ${changed.includes("keySha256") ? "?" : "key_rotated_at"}, updated_at = ?, config_fields = ? WHERE id = ?`,
          params: [...changed.map(value), ...(changed.includes("keySha256") ? [at] : []), at, JSON.stringify(fields), id],
        }
      : {
          sql: `INSERT INTO licenses (id, organization_id, expires_at, seats, offline_allowed, key_sha256, created_at, updated_at, config_fields)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          params: [id, organizationId, expiresAt, seats, offlineAllowed ? 1 : 0, keySha256, at, at, JSON.stringify(fields)],
        };
    const detail = { organizationId, expiresAt, seats, offlineAllowed, changed: changed.map((f) => (f === "keySha256" ? "key" : f)) };
    await this.#sql.batch([
      { ...write, required: true },
      this.#audit({ actor: "config", action: "license.config", licenseId: id, detail }, now),
      BUMP,
    ]);
  }

  /** When each license was last verified (the latest wins); not a change to its version. */
  async recordVerified(verified: ReadonlyMap<string, Date>): Promise<void> {
    if (verified.size === 0) return;
    await this.#sql.batch(
      [...verified].map(([id, at]) => ({
        sql: "UPDATE licenses SET last_verified_at = ? WHERE id = ? AND (last_verified_at IS NULL OR last_verified_at < ?)",
        params: [at.toISOString(), id, at.toISOString()],
      })),
    );
  }

  /** An audit record of its own (an action that changes no license). */
  async audit(entry: AuditEntry, now: Date): Promise<void> {
    await this.#sql.batch([this.#audit(entry, now)]);
  }

  /** The audit log, newest first. */
  async auditLog(filter: { licenseId?: string | undefined; limit: number }): Promise<AuditRecord[]> {
    const rows = await this.#sql.all<Omit<AuditRecord, "detail"> & { detail: string }>(
      `SELECT at AS "at", actor AS "actor", action AS "action", license_id AS "licenseId", detail AS "detail" FROM admin_audit
        WHERE (CAST(? AS text) IS NULL OR license_id = ?) ORDER BY seq DESC LIMIT ?`,
      [filter.licenseId ?? null, filter.licenseId ?? null, filter.limit],
    );
    return rows.map((row) => ({ ...row, detail: JSON.parse(row.detail) as Record<string, unknown> }));
  }
}
