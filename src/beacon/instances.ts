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

/**
 * A bound on new instances per license: an instance id the table does not hold yet is refused when the license
 * already has `max` instances first seen at or after `since`. Counted in the table, so it holds across replicas
 * (two replicas inserting at the same moment may each pass it once).
 */
export interface NewInstanceCap {
  max: number;
  since: Date;
}

export interface InstanceFilter {
  licenseId?: string | undefined;
  /** At most this many rows (the most recently seen), after skipping `offset`. */
  limit?: number | undefined;
  offset?: number | undefined;
}

export interface InstanceStore {
  /**
   * Upserts: first seen stays the earliest, last seen the latest; version and mode are the latest sighting's. With
   * a cap, a known instance is still updated but a new one past the cap is not stored: false then.
   */
  recordInstance(sighting: InstanceSighting, cap?: NewInstanceCap): Promise<boolean>;
  /** All instances, or one license's; most recently seen first; a page of them with limit and offset. */
  instances(filter?: InstanceFilter): Promise<StoredInstance[]>;
  /** Per license: how many instances, and how many seen at or after `activeSince`. */
  instanceCounts(activeSince: Date): Promise<Map<string, InstanceCount>>;
}

/** `admin.silentAfter`'s default: a sidecar verifies hourly and sends usage daily, so a day and two hours of nothing is news. */
export const DEFAULT_SILENT_AFTER_MS = 26 * 3_600_000;

/** How many instances the admin API and the console list at once unless asked for another page size. */
export const DEFAULT_INSTANCES_LIMIT = 500;

/** New instances a license may add per hour: generous for honest sidecars (restarts keep their id), a bound for a flood. */
export const newInstancesPerHour = (seats: number) => Math.max(10, 2 * seats);

/** One page of instances, each with its state at `now`, and how many there are in all (of the license, if one). */
export async function describeInstances(
  store: InstanceStore,
  options: InstanceFilter & { now: number; silentAfterMs: number },
): Promise<{ instances: InstanceView[]; total: number; active: number }> {
  const activeSince = options.now - options.silentAfterMs;
  const [rows, counts] = await Promise.all([
    store.instances({ licenseId: options.licenseId, limit: options.limit ?? DEFAULT_INSTANCES_LIMIT, offset: options.offset }),
    store.instanceCounts(new Date(activeSince)),
  ]);
  const wanted = options.licenseId === undefined ? [...counts.values()] : [counts.get(options.licenseId)].filter((c) => c !== undefined);
  const instances = rows.map((row): InstanceView => ({ ...row, state: Date.parse(row.lastSeenAt) >= activeSince ? "active" : "silent" }));
  return { instances, total: wanted.reduce((n, c) => n + c.total, 0), active: wanted.reduce((n, c) => n + c.active, 0) };
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
-- The new-instance cap counts one license's instances first seen in the last hour (created on older databases too).
CREATE INDEX IF NOT EXISTS instances_by_first_seen ON instances (license_id, first_seen_at);
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
-- The new-instance cap counts one license's instances first seen in the last hour.
CREATE INDEX IF NOT EXISTS instances_by_first_seen ON instances (license_id, first_seen_at);
`;
// ---- End of the instances schema.

/**
 * The upsert of both engines (SQLite's min/max of two values are PostgreSQL's LEAST/GREATEST), `$n` placeholders.
 * With a cap ($7 the window's start, $8 its bound) the row goes in only if it is known, or its license has fewer
 * than $8 first seen since $7: the count (an index range) is reached only for an instance the table does not hold.
 */
const upsert = (least: string, greatest: string) => `
INSERT INTO instances (license_id, instance_id, version, mode, first_seen_at, last_seen_at)
SELECT CAST($1 AS text), CAST($2 AS text), CAST($3 AS text), CAST($4 AS text), CAST($5 AS text), CAST($6 AS text)
WHERE CAST($7 AS text) IS NULL
  OR EXISTS (SELECT 1 FROM instances WHERE license_id = $1 AND instance_id = $2)
  OR (SELECT count(*) FROM instances WHERE license_id = $1 AND first_seen_at >= $7) < CAST($8 AS integer)
ON CONFLICT (license_id, instance_id) DO UPDATE SET
  version = CASE WHEN excluded.last_seen_at >= instances.last_seen_at THEN coalesce(excluded.version, instances.version) ELSE instances.version END,
  mode = CASE WHEN excluded.last_seen_at >= instances.last_seen_at THEN excluded.mode ELSE instances.mode END,
  first_seen_at = ${least}(instances.first_seen_at, excluded.first_seen_at),
  last_seen_at = ${greatest}(instances.last_seen_at, excluded.last_seen_at)`;
const SQLITE_UPSERT = upsert("min", "max").replace(/\$(\d)/g, "@p$1");
const POSTGRES_UPSERT = upsert("LEAST", "GREATEST");

const SELECT = `SELECT instance_id AS "instanceId", license_id AS "licenseId", version, mode,
  first_seen_at AS "firstSeenAt", last_seen_at AS "lastSeenAt" FROM instances`;
const ORDER = "ORDER BY last_seen_at DESC, license_id, instance_id";
const COUNTS = `SELECT license_id AS "licenseId", count(*) AS total,
  sum(CASE WHEN last_seen_at >= $since THEN 1 ELSE 0 END) AS active FROM instances GROUP BY license_id`;

/** First and last seen are both the sighting's time: an upsert keeps the earlier first and the later last. */
const sightingValues = (s: InstanceSighting, cap: NewInstanceCap | undefined) => [
  s.licenseId,
  s.instanceId,
  s.version,
  s.mode,
  s.seenAt.toISOString(),
  s.seenAt.toISOString(),
  cap ? cap.since.toISOString() : null,
  cap ? cap.max : 0,
];

/** LIMIT and OFFSET of a filter; no limit is every row. */
const page = (filter: InstanceFilter) => [filter.limit ?? null, filter.offset ?? 0];

export class SqliteInstances implements InstanceStore {
  readonly #db: Database.Database;
  constructor(db: Database.Database) {
    this.#db = db;
  }
  async recordInstance(sighting: InstanceSighting, cap?: NewInstanceCap): Promise<boolean> {
    const values = sightingValues(sighting, cap);
    return this.#db.prepare(SQLITE_UPSERT).run(Object.fromEntries(values.map((v, i) => [`p${i + 1}`, v]))).changes > 0;
  }
  async instances(filter: InstanceFilter = {}): Promise<StoredInstance[]> {
    const [limit, offset] = page(filter);
    return this.#db
      .prepare(`${SELECT} WHERE @license IS NULL OR license_id = @license ${ORDER} LIMIT coalesce(@limit, -1) OFFSET @offset`)
      .all({ license: filter.licenseId ?? null, limit, offset }) as StoredInstance[];
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
  async recordInstance(sighting: InstanceSighting, cap?: NewInstanceCap): Promise<boolean> {
    return ((await this.#pool.query(POSTGRES_UPSERT, sightingValues(sighting, cap))).rowCount ?? 0) > 0;
  }
  async instances(filter: InstanceFilter = {}): Promise<StoredInstance[]> {
    const { rows } = await this.#pool.query<StoredInstance>(
      `${SELECT} WHERE $1::text IS NULL OR license_id = $1 ${ORDER} LIMIT $2::bigint OFFSET $3::bigint`,
      [filter.licenseId ?? null, ...page(filter)],
    );
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
