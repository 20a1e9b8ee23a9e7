import { join } from "node:path";
import Database from "better-sqlite3";
import { BeaconStore, type StoredUsageSnapshot } from "../../src/beacon/store.ts";

/** What the beacon stored, read straight from its SQLite file: transaction id -> num_failed_send_attempts. */
export function storedTransactions(beaconDataDir: string): Map<string, number> {
  const db = new Database(join(beaconDataDir, "beacon.db"), { readonly: true });
  try {
    const rows = db.prepare("SELECT id, num_failed_send_attempts AS attempts FROM trace_transactions").all() as { id: string; attempts: number }[];
    return new Map(rows.map((r) => [r.id, r.attempts]));
  } finally {
    db.close();
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
