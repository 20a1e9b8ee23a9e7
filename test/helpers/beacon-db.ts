import Database from "better-sqlite3";
import { join } from "node:path";
import { BeaconStore, type StoredUsageSnapshot } from "../../src/beacon/store.ts";
import { query } from "./postgres.ts";

/** What the beacon stored, read from its SQLite file: transaction id -> num_failed_send_attempts. */
export function storedTransactions(beaconDataDir: string): Map<string, number> {
  const store = new BeaconStore(beaconDataDir, { readonly: true });
  try {
    return store.transactionAttempts();
  } finally {
    store.close();
  }
}

/** Usage snapshots the beacon stored; none when it has stored nothing yet. */
export function storedSnapshots(beaconDataDir: string): StoredUsageSnapshot[] {
  let store: BeaconStore;
  try {
    store = new BeaconStore(beaconDataDir, { readonly: true });
  } catch {
    return [];
  }
  try {
    return store.usageSnapshots();
  } finally {
    store.close();
  }
}

/** The rows of one query on what a beacon stored: its PostgreSQL database when it has one, else its SQLite file. */
export async function beaconRows<T extends Record<string, unknown>>(
  sql: string,
  beacon: { dataDir: string; databaseUrl?: string },
): Promise<T[]> {
  if (beacon.databaseUrl) return query<T>(beacon.databaseUrl, sql);
  const db = new Database(join(beacon.dataDir, "beacon.db"), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}
