import { join } from "node:path";
import Database from "better-sqlite3";

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
