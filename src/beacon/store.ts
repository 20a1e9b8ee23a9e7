import { chmodSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { EgressError } from "../errors.ts";
import type { OtlpSignal } from "../protocol/otlp.ts";
import type { TraceTransaction } from "../protocol/trace-transaction.ts";
import type { UsageMeasures } from "../protocol/usage-snapshot.ts";
import { INSTANCES_SQLITE_SCHEMA, SqliteInstances } from "./instances.ts";
import { FORWARD_QUEUE_SQLITE } from "./forward/queue.ts";
import { SqliteForwardQueue } from "./forward/queue-sqlite.ts";
import { licenseTablesSql } from "./license-store.ts";
import { TraceInserter, traceRows, transactionColumns, tuneForIngest, uuidBytes } from "./trace-insert.ts";

/**
 * 2: trace_transactions is a rowid table with a unique id (random ids as the table key made ingest 3x slower).
 * 3: the id is stored as its 16 bytes, not 36 characters: the unique index, where every insert lands at a random
 * place, is less than half the size (bench/: a 1M-row drain's inserts 22% faster). One UUID in any letter case is
 * one id.
 * 4: an id is unique per sending license, not across all of them: one license can no longer claim an id that
 * another will send (and have that one's record answered inserted_count 0, never counted).
 * 5: the instances table (src/beacon/instances.ts), and the licenses, their version and the admin audit log
 *    (src/beacon/license-store.ts); added beside the others, nothing rebuilt.
 */
const SCHEMA_VERSION = 5;
/** Below this version trace_transactions is rebuilt (its key changed); from it on, tables are only added. */
const TRANSACTIONS_KEY_VERSION = 4;

/** SQL for a UUID's text form (lower case, dashed) from its 16 bytes. */
const uuidText = (bytes: string) =>
  `lower(substr(hex(${bytes}), 1, 8) || '-' || substr(hex(${bytes}), 9, 4) || '-' || substr(hex(${bytes}), 13, 4) || '-' || substr(hex(${bytes}), 17, 4) || '-' || substr(hex(${bytes}), 21))`;

const schema = `
CREATE TABLE IF NOT EXISTS trace_transactions (
  seq INTEGER PRIMARY KEY,
  id BLOB NOT NULL,
  license_id TEXT NOT NULL,
  organization_id TEXT NOT NULL,
  tenant_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  trace_count INTEGER NOT NULL,
  start_insertion_time TEXT NOT NULL,
  end_insertion_time TEXT NOT NULL,
  start_interval_time TEXT NOT NULL,
  end_interval_time TEXT NOT NULL,
  status TEXT NOT NULL,
  num_failed_send_attempts INTEGER NOT NULL,
  transaction_type TEXT NOT NULL,
  received_at TEXT NOT NULL,
  UNIQUE (license_id, id)
);
CREATE INDEX IF NOT EXISTS trace_transactions_by_month ON trace_transactions (start_interval_time);
CREATE TABLE IF NOT EXISTS otlp_batches (
  seq INTEGER PRIMARY KEY,
  signal TEXT NOT NULL CHECK (signal IN ('metrics', 'traces', 'logs')),
  license_id TEXT,
  item_count INTEGER NOT NULL,
  body TEXT NOT NULL,
  received_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS usage_snapshots (
  license_id TEXT NOT NULL,
  from_timestamp TEXT NOT NULL,
  to_timestamp TEXT NOT NULL,
  measures TEXT NOT NULL,
  received_at TEXT NOT NULL,
  PRIMARY KEY (license_id, from_timestamp, to_timestamp)
) WITHOUT ROWID;
`;

export interface TraceReportRow {
  month: string;
  license_id: string;
  organization_id: string;
  transactions: number;
  traces: number;
}

export interface StoredOtlpBatch {
  signal: OtlpSignal;
  license_id: string | null;
  item_count: number;
  body: unknown;
}

export interface StoredUsageSnapshot {
  license_id: string;
  from_timestamp: string;
  to_timestamp: string;
  measures: UsageMeasures;
}

/** Where the beacon keeps what it receives: one SQLite file (WAL), `beacon.db` in the data dir. */
export class BeaconStore {
  readonly #db: Database.Database;
  readonly #transactions: TraceInserter;
  readonly #insertSnapshot: Database.Statement;
  readonly instances: SqliteInstances;
  // Prepared when first used: a read-only open (`beacon report`) of an older beacon.db has no forward_queue.
  #forwardQueue: SqliteForwardQueue | undefined;

  constructor(dataDir: string, options: { readonly?: boolean } = {}) {
    const path = join(dataDir, "beacon.db");
    if (options.readonly) {
      if (!existsSync(path)) {
        throw new EgressError("EGRESS_ERR_NO_DATA", `no beacon data at ${path}: has a beacon run with this dataDir?`);
      }
      this.#db = new Database(path, { readonly: true, fileMustExist: true });
    } else {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      this.#db = new Database(path);
      try {
        this.#db.pragma("journal_mode = WAL");
        // Files a beacon before this one left readable to all are made owner-only (new ones are, by the umask).
        for (const file of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(file)) chmodSync(file, 0o600);
        this.#db.pragma("synchronous = FULL");
        tuneForIngest(this.#db);
        this.#migrate();
      } catch (err) {
        this.#db.close(); // a refused file (a newer schema) is not left open
        throw err;
      }
    }
    this.#db.pragma("busy_timeout = 5000");
    this.#transactions = new TraceInserter(this.#db);
    this.#insertSnapshot = this.#db.prepare(`
      INSERT INTO usage_snapshots (license_id, from_timestamp, to_timestamp, measures, received_at)
      VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`);
    this.instances = new SqliteInstances(this.#db);
  }

  #migrate(): void {
    const version = this.#db.pragma("user_version", { simple: true }) as number;
    if (version > SCHEMA_VERSION) {
      throw new EgressError(
        "EGRESS_ERR_BEACON_SCHEMA",
        `beacon.db has schema version ${version}, newer than this beacon (${SCHEMA_VERSION}); upgrade the beacon`,
      );
    }
    // Before 4 the table is rebuilt (its key changed each time): rows are copied oldest first, ids as bytes.
    const rebuild = version > 0 && version < TRANSACTIONS_KEY_VERSION;
    this.#db.transaction(() => {
      if (rebuild) this.#db.exec("DROP INDEX trace_transactions_by_month; ALTER TABLE trace_transactions RENAME TO trace_transactions_old");
      this.#db.exec(schema);
      this.#db.exec(INSTANCES_SQLITE_SCHEMA);
      this.#db.exec(FORWARD_QUEUE_SQLITE); // telemetry forwarding's queue: an added table, no version of its own
      this.#db.exec(licenseTablesSql("sqlite"));
      if (rebuild) {
        this.#db.exec(`INSERT INTO trace_transactions (id, ${transactionColumns})
          SELECT ${version < 3 ? uuidBytes("id") : "id"}, ${transactionColumns} FROM trace_transactions_old ORDER BY ${version === 1 ? "received_at" : "seq"};
          DROP TABLE trace_transactions_old`);
      }
      this.#db.pragma(`user_version = ${SCHEMA_VERSION}`);
    })();
  }

  /**
   * Stores a batch of one license's in one transaction; ids that license already sent are skipped, so a re-sent
   * batch inserts nothing twice. Returns how many rows are new.
   */
  insertTransactions(licenseId: string, transactions: readonly TraceTransaction[], receivedAt: Date): number {
    return this.#db.transaction(() => this.#transactions.insert(licenseId, traceRows(transactions), receivedAt.toISOString()))();
  }

  /** Runs `work` in one transaction (one commit for several inserts). */
  atomically<T>(work: () => T): T {
    return this.#db.transaction(work)();
  }

  /** Batches still to go to the vendor's collector (src/beacon/forward/). */
  get forwardQueue(): SqliteForwardQueue {
    this.#forwardQueue ??= new SqliteForwardQueue(this.#db);
    return this.#forwardQueue;
  }

  /**
   * Stores one snapshot per (license, window); the window is keyed by its canonical UTC text (`Timestamp`: one text
   * per instant, as the beacon wrote it with `toISOString` before). Returns 1 if new, else 0.
   */
  insertUsageSnapshot(licenseId: string, from: string, to: string, measures: UsageMeasures, receivedAt: Date): 0 | 1 {
    const { changes } = this.#insertSnapshot.run(licenseId, from, to, JSON.stringify(measures), receivedAt.toISOString());
    return changes === 0 ? 0 : 1;
  }

  /**
   * Trace counts per month (of the interval start) and license, broken down by the organizations the license's
   * instance named; optionally one license, organization and/or month.
   */
  traceReport(
    filter: { licenseId?: string | undefined; organizationId?: string | undefined; month?: string | undefined } = {},
  ): TraceReportRow[] {
    return this.#db
      .prepare(
        `SELECT substr(start_interval_time, 1, 7) AS month, license_id, organization_id,
                count(*) AS transactions, sum(trace_count) AS traces
           FROM trace_transactions
          WHERE (@license IS NULL OR license_id = @license)
            AND (@org IS NULL OR organization_id = @org)
            AND (@month IS NULL OR substr(start_interval_time, 1, 7) = @month)
          GROUP BY month, license_id, organization_id
          ORDER BY month, license_id, organization_id`,
      )
      .all({ license: filter.licenseId ?? null, org: filter.organizationId ?? null, month: filter.month ?? null }) as TraceReportRow[];
  }

  /** The transaction ids one license (or, without one, every license) sent, with the failed-send count each arrived with. */
  transactionAttempts(licenseId?: string): Map<string, number> {
    const rows = this.#db
      .prepare(
        `SELECT ${uuidText("id")} AS id, num_failed_send_attempts AS attempts FROM trace_transactions WHERE @license IS NULL OR license_id = @license`,
      )
      .all({ license: licenseId ?? null }) as { id: string; attempts: number }[];
    return new Map(rows.map((row) => [row.id, row.attempts]));
  }

  otlpBatches(signal?: OtlpSignal): StoredOtlpBatch[] {
    const rows = this.#db
      .prepare("SELECT signal, license_id, item_count, body FROM otlp_batches WHERE @signal IS NULL OR signal = @signal ORDER BY seq")
      .all({ signal: signal ?? null }) as (Omit<StoredOtlpBatch, "body"> & { body: string })[];
    return rows.map((row) => ({ ...row, body: JSON.parse(row.body) }));
  }

  usageSnapshots(filter: { licenseId?: string | undefined; newest?: number | undefined } = {}): StoredUsageSnapshot[] {
    const order = filter.newest === undefined ? "from_timestamp" : "from_timestamp DESC LIMIT @limit";
    const rows = this.#db
      .prepare(
        `SELECT license_id, from_timestamp, to_timestamp, measures FROM usage_snapshots
          WHERE @license IS NULL OR license_id = @license ORDER BY ${order}`,
      )
      .all({ license: filter.licenseId ?? null, ...(filter.newest === undefined ? {} : { limit: filter.newest }) }) as (Omit<
      StoredUsageSnapshot,
      "measures"
    > & { measures: string })[];
    return rows.map((row) => ({ ...row, measures: JSON.parse(row.measures) }));
  }

  /** The connection, for the tables other modules keep in this file (licenses). */
  get database(): Database.Database {
    return this.#db;
  }

  close(): void {
    this.#db.close();
  }
}
