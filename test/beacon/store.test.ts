import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import { BeaconStore } from "../../src/beacon/store.ts";
import { ORG_ID, traceTransaction } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/processes.ts";

test("a beacon.db of schema 1 (transactions keyed by id) is upgraded in place: rows, report and dedup survive", () => {
  const dir = tempDir();
  const kept = traceTransaction({ trace_count: 9 });
  // Schema 1 as released: the table was keyed by the random transaction id.
  const v1 = new Database(join(dir, "beacon.db"));
  v1.exec(`
    CREATE TABLE trace_transactions (id TEXT PRIMARY KEY, license_id TEXT NOT NULL, organization_id TEXT NOT NULL,
      tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, trace_count INTEGER NOT NULL, start_insertion_time TEXT NOT NULL,
      end_insertion_time TEXT NOT NULL, start_interval_time TEXT NOT NULL, end_interval_time TEXT NOT NULL,
      status TEXT NOT NULL, num_failed_send_attempts INTEGER NOT NULL, transaction_type TEXT NOT NULL,
      received_at TEXT NOT NULL) WITHOUT ROWID;
    CREATE INDEX trace_transactions_by_month ON trace_transactions (start_interval_time);
    PRAGMA user_version = 1;`);
  v1.prepare("INSERT INTO trace_transactions VALUES (?, 'acme-prod', ?, ?, ?, ?, ?, ?, ?, ?, ?, 2, ?, '2026-11-01T10:06:00.000Z')").run(
    kept.id, ORG_ID, kept.tenant_id, kept.session_id, kept.trace_count, kept.start_insertion_time, kept.end_insertion_time,
    kept.start_interval_time, kept.end_interval_time, kept.status, kept.transaction_type,
  );
  v1.close();

  const store = new BeaconStore(dir);
  try {
    assert.deepEqual(store.traceReport(), [{ month: "2026-11", organization_id: ORG_ID, license_id: "acme-prod", transactions: 1, traces: 9 }]);
    assert.equal(store.insertTransactions("acme-prod", [kept], new Date()), 0, "an id stored before the upgrade is still a duplicate");
    assert.equal(store.insertTransactions("acme-prod", [traceTransaction()], new Date()), 1);
  } finally {
    store.close();
  }
  const upgraded = new Database(join(dir, "beacon.db"), { readonly: true });
  assert.equal(upgraded.pragma("user_version", { simple: true }), 2);
  assert.equal((upgraded.prepare("SELECT num_failed_send_attempts AS n FROM trace_transactions WHERE id = ?").get(kept.id) as { n: number }).n, 2);
  upgraded.close();
});
