import type Database from "better-sqlite3";
import type { TraceTransaction } from "../protocol/trace-transaction.ts";

/** SQL for a UUID's 16 bytes from its text form (beacon.db stores ids so: src/beacon/store.ts, schema 3). */
export const uuidBytes = (text: string) => `unhex(replace(${text}, '-', ''))`;

/** The columns trace_transactions has had in every version, in order. */
export const transactionColumns = `license_id, organization_id, tenant_id, session_id, trace_count, start_insertion_time,
  end_insertion_time, start_interval_time, end_interval_time, status, num_failed_send_attempts, transaction_type, received_at`;

/**
 * Settings for a database that takes a steady stream of inserts keyed by random ids: a page cache that holds
 * the hot part of the unique index, and a WAL checkpointed every ~40 MB rather than every 4 MB, so a page
 * written by many commits goes to the database file once (bench/: +25% on a drain of 1M records).
 */
export function tuneForIngest(db: Database.Database): void {
  db.pragma("cache_size = -32768"); // KiB
  db.pragma("wal_autocheckpoint = 10000"); // pages
}

/**
 * A batch's records as one flat array, FIELDS_PER_ROW values each in the insert's order: what the writer thread is
 * sent (a structured clone of plain values copies a fifth of what one of objects does, bench/RESULTS.md).
 */
export type TraceRows = (string | number)[];
export const FIELDS_PER_ROW = 12;

export function traceRows(transactions: readonly TraceTransaction[]): TraceRows {
  const rows: TraceRows = [];
  for (const t of transactions) {
    rows.push(
      t.id,
      t.organization_id,
      t.tenant_id,
      t.session_id,
      t.trace_count,
      t.start_insertion_time,
      t.end_insertion_time,
      t.start_interval_time,
      t.end_interval_time,
      t.status,
      t.num_failed_send_attempts,
      t.transaction_type,
    );
  }
  return rows;
}

/** Inserts one license's trace transactions on a connection to beacon.db (the server's own, or its writer thread's). */
export class TraceInserter {
  readonly #insert: Database.Statement;

  constructor(db: Database.Database) {
    // Positional parameters: binding an object's named ones cost 25% more per row (bench/: drain).
    this.#insert = db.prepare(`INSERT INTO trace_transactions (id, ${transactionColumns})
      VALUES (${uuidBytes("?")}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (license_id, id) DO NOTHING`);
  }

  /** Rows new to this license (an id it already sent is skipped); the caller holds the transaction. */
  insert(licenseId: string, rows: TraceRows, receivedAt: string): number {
    let inserted = 0;
    for (let at = 0; at < rows.length; at += FIELDS_PER_ROW) {
      // traceRows' order, the license and the time put where transactionColumns has them.
      inserted += this.#insert.run(
        rows[at],
        licenseId,
        rows[at + 1],
        rows[at + 2],
        rows[at + 3],
        rows[at + 4],
        rows[at + 5],
        rows[at + 6],
        rows[at + 7],
        rows[at + 8],
        rows[at + 9],
        rows[at + 10],
        rows[at + 11],
        receivedAt,
      ).changes;
    }
    return inserted;
  }
}
