import { join } from "node:path";
import type { Logger } from "pino";
import type { OtlpSignal } from "../protocol/otlp.ts";
import type { OtlpText } from "./otlp-insert.ts";
import type { TraceTransaction } from "../protocol/trace-transaction.ts";
import type { UsageMeasures } from "../protocol/usage-snapshot.ts";
import type { BeaconConfig } from "./config.ts";
import type { InstanceStore } from "./instances.ts";
import type { ForwardQueue } from "./forward/queue.ts";
import { LicenseStore } from "./license-store.ts";
import { sqliteExecutor } from "./sql-executor.ts";
import { IngestWriter } from "./ingest-writer.ts";
import { BeaconStore, type StoredOtlpBatch, type StoredUsageSnapshot, type TraceReportRow } from "./store.ts";

/** One license's batch of trace transactions. */
export interface IngestBatch {
  licenseId: string;
  transactions: readonly TraceTransaction[];
}

export interface UsageSnapshotFilter {
  licenseId?: string | undefined;
  /** Newest first, at most this many. */
  newest?: number | undefined;
}

export interface TraceReportFilter {
  licenseId?: string | undefined;
  organizationId?: string | undefined;
  month?: string | undefined;
}

/**
 * What the beacon keeps, on either engine: SQLite (`beacon.db` in the data dir, the embedded default) or
 * PostgreSQL (`database.url`), which any number of beacon replicas share. Both pass one test suite
 * (test/beacon/storage.test.ts).
 */
export interface BeaconStorage {
  /** The licenses and the admin audit log (src/beacon/license-store.ts). */
  readonly licenses: LicenseStore;
  /**
   * Stores several licenses' batches in one transaction (one commit); an id a license already sent is skipped, also
   * when another replica stores it at the same moment. Per batch, how many rows are new.
   */
  ingest(batches: readonly IngestBatch[], receivedAt: Date): Promise<number[]>;
  /**
   * One license's records in one transaction, read batch by batch from `batches` (called again when PostgreSQL has
   * the transaction run again): an offline true-up's file, never all of it in memory. Deduplicated as `ingest` is;
   * how many rows are new.
   */
  importTransactions(licenseId: string, batches: () => Iterable<readonly TraceTransaction[]>, receivedAt: Date): Promise<number>;
  /**
   * `text`: the request as JSON text (the route's serialisation of it, or the body as received when parsing left it
   * unchanged: then its UTF-8 bytes). `forward`: also queued for the vendor's collector, in the same transaction.
   */
  insertOtlp(
    signal: OtlpSignal,
    licenseId: string | null,
    itemCount: number,
    text: OtlpText,
    receivedAt: Date,
    forward?: boolean,
  ): Promise<void>;
  /** The batches still to be forwarded (telemetry.forward). */
  readonly forwardQueue: ForwardQueue;
  /** One snapshot per (license, window: canonical `Timestamp` texts); 1 if new, else 0. */
  insertUsageSnapshot(licenseId: string, from: string, to: string, measures: UsageMeasures, receivedAt: Date): Promise<0 | 1>;
  traceReport(filter?: TraceReportFilter): Promise<TraceReportRow[]>;
  /** What was stored, oldest first (the demo and the tests read it). */
  otlpBatches(signal?: OtlpSignal): Promise<StoredOtlpBatch[]>;
  /** Oldest first; or one license's, newest first and at most `limit` (the admin listener's). */
  usageSnapshots(filter?: UsageSnapshotFilter): Promise<StoredUsageSnapshot[]>;
  /** The sidecar instances seen, per license (src/beacon/instances.ts). */
  readonly instances: InstanceStore;
  /** Throws (DatabaseUnavailableError) while the database cannot be reached: the beacon is not ready. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** The SQLite store behind the async interface. */
class SqliteBeaconStorage implements BeaconStorage {
  readonly #store: BeaconStore;
  readonly instances: InstanceStore;
  readonly licenses: LicenseStore;
  readonly #writer: IngestWriter;
  constructor(store: BeaconStore, dataDir: string, options: { readonly?: boolean; logger?: Logger | undefined }) {
    this.#store = store;
    this.#writer = new IngestWriter(join(dataDir, "beacon.db"), { logger: options.logger });
    if (!options.readonly) this.#writer.start(); // a database it cannot open shows in readiness from the start
    this.instances = store.instances;
    this.licenses = new LicenseStore(sqliteExecutor(store.database));
  }
  async ingest(batches: readonly IngestBatch[], receivedAt: Date): Promise<number[]> {
    return this.#writer.ingest(batches, receivedAt);
  }
  async importTransactions(licenseId: string, batches: () => Iterable<readonly TraceTransaction[]>, receivedAt: Date): Promise<number> {
    // Synchronous, as every SQLite write here: the event loop waits for the commit (2 s or more for 200k records).
    return this.#store.atomically(() => {
      let inserted = 0;
      for (const batch of batches()) inserted += this.#store.insertTransactions(licenseId, batch, receivedAt);
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
    await this.#writer.insertOtlp({ signal, licenseId, itemCount, text, forward }, receivedAt);
  }
  get forwardQueue(): ForwardQueue {
    return this.#store.forwardQueue;
  }
  async insertUsageSnapshot(licenseId: string, from: string, to: string, measures: UsageMeasures, receivedAt: Date): Promise<0 | 1> {
    return this.#store.insertUsageSnapshot(licenseId, from, to, measures, receivedAt);
  }
  async traceReport(filter: TraceReportFilter = {}): Promise<TraceReportRow[]> {
    return this.#store.traceReport(filter);
  }
  async otlpBatches(signal?: OtlpSignal): Promise<StoredOtlpBatch[]> {
    return this.#store.otlpBatches(signal);
  }
  async usageSnapshots(filter: UsageSnapshotFilter = {}): Promise<StoredUsageSnapshot[]> {
    return this.#store.usageSnapshots(filter);
  }
  async ready(): Promise<void> {
    await this.#writer.ready();
  }
  async close(): Promise<void> {
    await this.#writer.close();
    this.#store.close();
  }
}

/** The store `config` names: PostgreSQL when `database.url` is set, else `beacon.db` in the data dir. */
export async function openBeaconStorage(
  config: BeaconConfig,
  options: { readonly?: boolean; logger?: Logger } = {},
): Promise<BeaconStorage> {
  if (config.database.url) {
    // Loaded only when used: an embedded beacon never pays for the PostgreSQL client.
    const { PostgresBeaconStorage } = await import("./store-postgres.ts");
    return PostgresBeaconStorage.open(config.database, options.logger);
  }
  return new SqliteBeaconStorage(new BeaconStore(config.dataDir, options), config.dataDir, options);
}
