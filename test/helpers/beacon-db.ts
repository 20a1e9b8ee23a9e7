import { BeaconStore, type StoredUsageSnapshot } from "../../src/beacon/store.ts";

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
