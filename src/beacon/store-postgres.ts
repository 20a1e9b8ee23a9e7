import type pg from "pg";
import pino, { type Logger } from "pino";
import { DatabaseUnavailableError } from "../database-unavailable.ts";
import { EgressError } from "../errors.ts";
import { openPool } from "../pg-pool.ts";
import { inTransaction } from "../pg-transaction.ts";
import type { OtlpSignal } from "../protocol/otlp.ts";
import { type OtlpText, otlpString, otlpTextBytes } from "./otlp-insert.ts";
import type { TraceTransaction } from "../protocol/trace-transaction.ts";
import type { UsageMeasures } from "../protocol/usage-snapshot.ts";
import { redactUrl } from "../config/redact.ts";
import { INSTANCES_POSTGRES_SCHEMA, PostgresInstances } from "./instances.ts";
import { FORWARD_QUEUE_POSTGRES, type ForwardQueue } from "./forward/queue.ts";
import { PostgresForwardQueue } from "./forward/queue-postgres.ts";
import { LicenseStore, licenseTablesSql } from "./license-store.ts";
import { postgresExecutor } from "./sql-executor.ts";
import type { BeaconStorage, IngestBatch, TraceReportFilter, UsageSnapshotFilter } from "./storage.ts";
import type { StoredOtlpBatch, StoredUsageSnapshot, TraceReportRow } from "./store.ts";

/**
 * 1: the tables of SQLite's schema 4, in PostgreSQL's types (a UUID id, unique per sending license).
 * 2: the instances table (src/beacon/instances.ts), and the licenses, their version and the admin audit log
 *    (src/beacon/license-store.ts); added beside the others.
 */
const SCHEMA_VERSION = 2;

/** Any number taken once for the whole cluster: replicas starting together migrate one at a time. */
const MIGRATION_LOCK = 0x6567_7265; // "egre"

const SCHEMA = `
CREATE TABLE IF NOT EXISTS beacon_schema (version integer NOT NULL);
CREATE TABLE IF NOT EXISTS trace_transactions (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id uuid NOT NULL,
  license_id text NOT NULL,
  organization_id text NOT NULL,
  tenant_id text NOT NULL,
  session_id text NOT NULL,
  trace_count bigint NOT NULL,
  start_insertion_time text NOT NULL,
  end_insertion_time text NOT NULL,
  start_interval_time text NOT NULL,
  end_interval_time text NOT NULL,
  status text NOT NULL,
  num_failed_send_attempts integer NOT NULL,
  transaction_type text NOT NULL,
  received_at text NOT NULL,
  UNIQUE (license_id, id)
);
CREATE INDEX IF NOT EXISTS trace_transactions_by_month ON trace_transactions (start_interval_time);
CREATE TABLE IF NOT EXISTS otlp_batches (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  signal text NOT NULL CHECK (signal IN ('metrics', 'traces', 'logs')),
  license_id text,
  item_count integer NOT NULL,
  body text NOT NULL,
  received_at text NOT NULL
);
CREATE TABLE IF NOT EXISTS usage_snapshots (
  license_id text NOT NULL,
  from_timestamp text NOT NULL,
  to_timestamp text NOT NULL,
  measures text NOT NULL,
  received_at text NOT NULL,
  PRIMARY KEY (license_id, from_timestamp, to_timestamp)
);
`;

/** One batch as one statement: a column array each, so a batch of 500 is one round trip. */
const INSERT_BATCH = `
INSERT INTO trace_transactions (id, license_id, organization_id, tenant_id, session_id, trace_count, start_insertion_time,
  end_insertion_time, start_interval_time, end_interval_time, status, num_failed_send_attempts, transaction_type, received_at)
SELECT t.id, $1, t.organization_id, t.tenant_id, t.session_id, t.trace_count, t.start_insertion_time, t.end_insertion_time,
  t.start_interval_time, t.end_interval_time, t.status, t.num_failed_send_attempts, t.transaction_type, $2
FROM unnest($3::uuid[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[],
  $12::text[], $13::integer[], $14::text[])
  AS t (id, organization_id, tenant_id, session_id, trace_count, start_insertion_time, end_insertion_time,
    start_interval_time, end_interval_time, status, num_failed_send_attempts, transaction_type)
ORDER BY t.id
ON CONFLICT (license_id, id) DO NOTHING`;

/** One license's rows as one statement (INSERT_BATCH); how many are new. */
async function insertBatch(client: pg.PoolClient, licenseId: string, ts: readonly TraceTransaction[], received: string): Promise<number> {
  if (ts.length === 0) return 0;
  const column = <K extends keyof TraceTransaction>(key: K) => ts.map((t) => t[key]);
  const result = await client.query(INSERT_BATCH, [
    licenseId,
    received,
    column("id"),
    column("organization_id"),
    column("tenant_id"),
    column("session_id"),
    column("trace_count"),
    column("start_insertion_time"),
    column("end_insertion_time"),
    column("start_interval_time"),
    column("end_interval_time"),
    column("status"),
    column("num_failed_send_attempts"),
    column("transaction_type"),
  ]);
  return result.rowCount ?? 0;
}

/** Tries of a transaction PostgreSQL broke (a deadlock, a serialization conflict). */
const ATTEMPTS = 5;

export interface PostgresSettings {
  url: string;
  poolSize: number;
}

/**
 * The beacon's tables in PostgreSQL, shared by any number of replicas. Exactly-once per license rests on the
 * unique (license_id, id) index: a replica inserting an id another replica's open transaction holds waits for it,
 * then skips the row. Rows are inserted in (license, id) order, so two replicas' transactions never wait on each
 * other in a cycle.
 */
export class PostgresBeaconStorage implements BeaconStorage {
  readonly #pool: pg.Pool;
  readonly instances: PostgresInstances;
  readonly forwardQueue: ForwardQueue;
  readonly licenses: LicenseStore;

  private constructor(pool: pg.Pool) {
    this.#pool = pool;
    this.instances = new PostgresInstances(pool);
    this.forwardQueue = new PostgresForwardQueue(pool);
    this.licenses = new LicenseStore(postgresExecutor(pool));
  }

  /** Connects, and creates or migrates the schema (one replica at a time). */
  static async open(settings: PostgresSettings, logger: Logger = pino({ level: "silent" })): Promise<PostgresBeaconStorage> {
    const pool = openPool({ url: settings.url, max: settings.poolSize }, logger, "beacon");
    const storage = new PostgresBeaconStorage(pool);
    try {
      await storage.#migrate();
    } catch (err) {
      await pool.end();
      if (err instanceof EgressError) throw err;
      const code = (err as { code?: string }).code;
      throw new EgressError(
        "EGRESS_ERR_DATABASE",
        `cannot open the beacon's database at ${redactUrl(settings.url)} (database.url): ${code ? `${code} ` : ""}${(err as Error).message}`,
      );
    }
    return storage;
  }

  async #migrate(): Promise<void> {
    await this.#transaction(async (client) => {
      await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
      await client.query(SCHEMA);
      await client.query(INSTANCES_POSTGRES_SCHEMA);
      await client.query(FORWARD_QUEUE_POSTGRES); // telemetry forwarding's queue: an added table, no version of its own
      await client.query(licenseTablesSql("postgresql"));
      const { rows } = await client.query<{ version: number }>("SELECT version FROM beacon_schema");
      const version = rows[0]?.version ?? 0;
      if (version > SCHEMA_VERSION) {
        throw new EgressError(
          "EGRESS_ERR_BEACON_SCHEMA",
          `the database has beacon schema version ${version}, newer than this beacon (${SCHEMA_VERSION}); upgrade the beacon`,
        );
      }
      if (rows.length === 0) await client.query("INSERT INTO beacon_schema (version) VALUES ($1)", [SCHEMA_VERSION]);
      else if (version < SCHEMA_VERSION) await client.query("UPDATE beacon_schema SET version = $1", [SCHEMA_VERSION]);
    });
  }

  /** Runs `work` in one transaction, again when PostgreSQL broke a deadlock or a serialization conflict. */
  #transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.#pool, work, ATTEMPTS);
  }

  async ingest(batches: readonly IngestBatch[], receivedAt: Date): Promise<number[]> {
    const received = receivedAt.toISOString();
    // Licenses in order, and rows by id within each statement: every transaction takes its row locks in one order.
    const order = [...batches.keys()].sort((a, b) => (batches[a]!.licenseId < batches[b]!.licenseId ? -1 : 1));
    return this.#transaction(async (client) => {
      const inserted = new Array<number>(batches.length).fill(0);
      for (const i of order) inserted[i] = await insertBatch(client, batches[i]!.licenseId, batches[i]!.transactions, received);
      return inserted;
    });
  }

  async importTransactions(licenseId: string, batches: () => Iterable<readonly TraceTransaction[]>, receivedAt: Date): Promise<number> {
    const received = receivedAt.toISOString();
    // Rows are in id order within each statement only: an ingest of the same ids at the same moment may deadlock
    // with it, and PostgreSQL's broken deadlock runs the import again from its first batch.
    return this.#transaction(async (client) => {
      let inserted = 0;
      for (const batch of batches()) inserted += await insertBatch(client, licenseId, batch, received);
      return inserted;
    });
  }

  async insertOtlp(
    signal: OtlpSignal,
    licenseId: string | null,
    itemCount: number,
    text: OtlpText,
    receivedAt: Date,
    forward = false,
  ): Promise<void> {
    // One statement, so the batch and its place in the forward queue commit together.
    await this.#pool.query(
      `WITH batch AS (
         INSERT INTO otlp_batches (signal, license_id, item_count, body, received_at) VALUES ($1, $2, $3, $4, $5) RETURNING seq)
       INSERT INTO forward_queue (seq, bytes, received_at) SELECT seq, $6, $5 FROM batch WHERE $7::boolean`,
      // A text parameter goes as a string: node-postgres would send bytes as bytea.
      [signal, licenseId, itemCount, otlpString(text), receivedAt.toISOString(), otlpTextBytes(text), forward],
    );
  }

  async insertUsageSnapshot(licenseId: string, from: string, to: string, measures: UsageMeasures, receivedAt: Date): Promise<0 | 1> {
    const result = await this.#pool.query(
      `INSERT INTO usage_snapshots (license_id, from_timestamp, to_timestamp, measures, received_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT DO NOTHING`,
      [licenseId, from, to, JSON.stringify(measures), receivedAt.toISOString()],
    );
    return result.rowCount === 0 ? 0 : 1;
  }

  async traceReport(filter: TraceReportFilter = {}): Promise<TraceReportRow[]> {
    const { rows } = await this.#pool.query<{
      month: string;
      license_id: string;
      organization_id: string;
      transactions: string;
      traces: string;
    }>(
      `SELECT substr(start_interval_time, 1, 7) AS month, license_id, organization_id,
              count(*) AS transactions, sum(trace_count) AS traces
         FROM trace_transactions
        WHERE ($1::text IS NULL OR license_id = $1)
          AND ($2::text IS NULL OR organization_id = $2)
          AND ($3::text IS NULL OR substr(start_interval_time, 1, 7) = $3)
        GROUP BY month, license_id, organization_id
        ORDER BY month, license_id, organization_id`,
      [filter.licenseId ?? null, filter.organizationId ?? null, filter.month ?? null],
    );
    // count() and sum() of bigints come as text: exact, then numbers as the SQLite store gives them.
    return rows.map((row) => ({ ...row, transactions: Number(row.transactions), traces: Number(row.traces) }));
  }

  async otlpBatches(signal?: OtlpSignal): Promise<StoredOtlpBatch[]> {
    const { rows } = await this.#pool.query<Omit<StoredOtlpBatch, "body"> & { body: string }>(
      "SELECT signal, license_id, item_count, body FROM otlp_batches WHERE $1::text IS NULL OR signal = $1 ORDER BY seq",
      [signal ?? null],
    );
    return rows.map((row) => ({ ...row, body: JSON.parse(row.body) }));
  }

  async usageSnapshots(filter: UsageSnapshotFilter = {}): Promise<StoredUsageSnapshot[]> {
    const order = filter.newest === undefined ? "from_timestamp" : "from_timestamp DESC LIMIT $2";
    const { rows } = await this.#pool.query<Omit<StoredUsageSnapshot, "measures"> & { measures: string }>(
      `SELECT license_id, from_timestamp, to_timestamp, measures FROM usage_snapshots
        WHERE $1::text IS NULL OR license_id = $1 ORDER BY ${order}`,
      filter.newest === undefined ? [filter.licenseId ?? null] : [filter.licenseId ?? null, filter.newest],
    );
    return rows.map((row) => ({ ...row, measures: JSON.parse(row.measures) }));
  }

  async ready(): Promise<void> {
    await this.#pool.query("SELECT 1").catch((err) => {
      throw new DatabaseUnavailableError(err);
    });
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
