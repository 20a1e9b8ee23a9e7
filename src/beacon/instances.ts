import type Database from "better-sqlite3";
import type pg from "pg";
import type { InstanceMode } from "../protocol/instance.ts";

/**
 * The sidecar instances a beacon has heard from: per license and instance id (the `X-Egress-Instance-Id` every
 * sidecar sends, docs/PROTOCOL.md), the version and mode it last said it runs and when it was first and last seen.
 * Kept on both engines; the tables are created by each store's migration (SQLite schema 5, PostgreSQL schema 2).
 */

/** One request (or one imported export file) from an instance. */
export interface InstanceSighting {
  licenseId: string;
  /** Lower-case UUID text. */
  instanceId: string;
  /** Null when the User-Agent did not say (an older sidecar, a hand-made request). */
  version: string | null;
  mode: InstanceMode;
  seenAt: Date;
}

export interface StoredInstance {
  instanceId: string;
  licenseId: string;
  version: string | null;
  mode: InstanceMode;
  firstSeenAt: string;
  lastSeenAt: string;
}

/** An instance as the admin API shows it: `silent` when not seen for `admin.silentAfter`. */
export interface InstanceView extends StoredInstance {
  state: "active" | "silent";
}

export interface InstanceCount {
  total: number;
  /** Seen within `admin.silentAfter`. */
  active: number;
}

export interface InstanceStore {
  /** Upserts: first seen stays the earliest, last seen the latest; version and mode are the latest sighting's. */
  recordInstance(sighting: InstanceSighting): Promise<void>;
  /** All instances, or one license's; most recently seen first. */
  instances(filter?: { licenseId?: string | undefined }): Promise<StoredInstance[]>;
  /** Per license: how many instances, and how many seen at or after `activeSince`. */
  instanceCounts(activeSince: Date): Promise<Map<string, InstanceCount>>;
}

/** `admin.silentAfter`'s default: a sidecar verifies hourly and sends usage daily, so a day and two hours of nothing is news. */
export const DEFAULT_SILENT_AFTER_MS = 26 * 3_600_000;

/** Each instance with its state at `now`. */
export async function describeInstances(
  store: InstanceStore,
  options: { licenseId?: string | undefined; now: Date; silentAfterMs: number },
): Promise<InstanceView[]> {
  const activeSince = options.now.getTime() - options.silentAfterMs;
  const rows = await store.instances({ licenseId: options.licenseId });
  return rows.map((row) => ({ ...row, state: Date.parse(row.lastSeenAt) >= activeSince ? "active" : "silent" }));
}

// ---- Schema: the `instances` table (SQLite schema 5, PostgreSQL schema 2). Times are ISO 8601 UTC text, as the
// ---- other tables keep them: they compare in time order as text.
export const INSTANCES_SQLITE_SCHEMA = `
CREATE TABLE IF NOT EXISTS instances (
  license_id TEXT NOT NULL,
  instance_id TEXT NOT NULL,
  version TEXT,
  mode TEXT NOT NULL CHECK (mode IN ('online', 'offline')),
  first_seen_at TEXT NOT NULL,
  last_seen_at TEXT NOT NULL,
  PRIMARY KEY (license_id, instance_id)
) WITHOUT ROWID;
`;

export const INSTANCES_POSTGRES_SCHEMA = `
CREATE TABLE IF NOT EXISTS instances (
  license_id text NOT NULL,
  instance_id text NOT NULL,
  version text,
  mode text NOT NULL CHECK (mode IN ('online', 'offline')),
  first_seen_at text NOT NULL,
  last_seen_at text NOT NULL,
  PRIMARY KEY (license_id, instance_id)
);
`;
// ---- End of the instances schema.

/** The upsert of both engines (SQLite's min/max of two values are PostgreSQL's LEAST/GREATEST). */
const upsert = (placeholders: string[], least: string, greatest: string) => `
INSERT INTO instances (license_id, instance_id, version, mode, first_seen_at, last_seen_at)
VALUES (${placeholders.join(", ")})
ON CONFLICT (license_id, instance_id) DO UPDATE SET
  version = CASE WHEN excluded.last_seen_at >= instances.last_seen_at THEN coalesce(excluded.version, instances.version) ELSE instances.version END,
  mode = CASE WHEN excluded.last_seen_at >= instances.last_seen_at THEN excluded.mode ELSE instances.mode END,
  first_seen_at = ${least}(instances.first_seen_at, excluded.first_seen_at),
  last_seen_at = ${greatest}(instances.last_seen_at, excluded.last_seen_at)`;

const SELECT = `SELECT instance_id AS "instanceId", license_id AS "licenseId", version, mode,
  first_seen_at AS "firstSeenAt", last_seen_at AS "lastSeenAt" FROM instances`;
const ORDER = "ORDER BY last_seen_at DESC, license_id, instance_id";
const COUNTS = `SELECT license_id AS "licenseId", count(*) AS total,
  sum(CASE WHEN last_seen_at >= $since THEN 1 ELSE 0 END) AS active FROM instances GROUP BY license_id`;

/** First and last seen are both the sighting's time: an upsert keeps the earlier first and the later last. */
const sightingValues = (s: InstanceSighting) => [
  s.licenseId,
  s.instanceId,
  s.version,
  s.mode,
  s.seenAt.toISOString(),
  s.seenAt.toISOString(),
];

export class SqliteInstances implements InstanceStore {
  readonly #db: Database.Database;
  constructor(db: Database.Database) {
    this.#db = db;
  }
  async recordInstance(sighting: InstanceSighting): Promise<void> {
    this.#db.prepare(upsert(["?", "?", "?", "?", "?", "?"], "min", "max")).run(...sightingValues(sighting));
  }
  async instances(filter: { licenseId?: string | undefined } = {}): Promise<StoredInstance[]> {
    return this.#db
      .prepare(`${SELECT} WHERE @license IS NULL OR license_id = @license ${ORDER}`)
      .all({ license: filter.licenseId ?? null }) as StoredInstance[];
  }
  async instanceCounts(activeSince: Date): Promise<Map<string, InstanceCount>> {
    const rows = this.#db.prepare(COUNTS.replace("$since", "@since")).all({ since: activeSince.toISOString() }) as {
      licenseId: string;
      total: number;
      active: number;
    }[];
    return new Map(rows.map((row) => [row.licenseId, { total: row.total, active: row.active }]));
  }
}

export class PostgresInstances implements InstanceStore {
  readonly #pool: pg.Pool;
  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }
  async recordInstance(sighting: InstanceSighting): Promise<void> {
    await this.#pool.query(upsert(["$1", "$2", "$3", "$4", "$5", "$6"], "LEAST", "GREATEST"), sightingValues(sighting));
  }
  async instances(filter: { licenseId?: string | undefined } = {}): Promise<StoredInstance[]> {
    const { rows } = await this.#pool.query<StoredInstance>(`${SELECT} WHERE $1::text IS NULL OR license_id = $1 ${ORDER}`, [
      filter.licenseId ?? null,
    ]);
    return rows;
  }
  async instanceCounts(activeSince: Date): Promise<Map<string, InstanceCount>> {
    const { rows } = await this.#pool.query<{ licenseId: string; total: string; active: string }>(COUNTS.replace("$since", "$1"), [
      activeSince.toISOString(),
    ]);
    // count() and sum() come as text (bigint).
    return new Map(rows.map((row) => [row.licenseId, { total: Number(row.total), active: Number(row.active) }]));
  }
}
