import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import { BeaconStore } from "../../src/beacon/store.ts";
import { uuidBytes } from "../../src/beacon/trace-insert.ts";
import { ORG_ID, traceTransaction } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/processes.ts";

const columns = `license_id TEXT NOT NULL, organization_id TEXT NOT NULL,
  tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, trace_count INTEGER NOT NULL, start_insertion_time TEXT NOT NULL,
  end_insertion_time TEXT NOT NULL, start_interval_time TEXT NOT NULL, end_interval_time TEXT NOT NULL,
  status TEXT NOT NULL, num_failed_send_attempts INTEGER NOT NULL, transaction_type TEXT NOT NULL,
  received_at TEXT NOT NULL`;

/**
 * A beacon.db as released in schema 1 (keyed by the text id), 2 (rowid table, unique text id) or 3 (unique id as
 * bytes, across all licenses) or 4 (unique per license; before the licenses were kept in it), holding `rows`.
 */
function legacyBeacon(version: 1 | 2 | 3 | 4, rows: ReturnType<typeof traceTransaction>[]): string {
  const dir = tempDir();
  const db = new Database(join(dir, "beacon.db"));
  db.exec(
    version === 1
      ? `CREATE TABLE trace_transactions (id TEXT PRIMARY KEY, ${columns}) WITHOUT ROWID;`
      : version === 2
        ? `CREATE TABLE trace_transactions (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, ${columns});`
        : version === 3
          ? `CREATE TABLE trace_transactions (seq INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE, ${columns});`
          : `CREATE TABLE trace_transactions (seq INTEGER PRIMARY KEY, id BLOB NOT NULL, ${columns}, UNIQUE (license_id, id));`,
  );
  db.exec(`CREATE INDEX trace_transactions_by_month ON trace_transactions (start_interval_time); PRAGMA user_version = ${version};`);
  const insert = db.prepare(`INSERT INTO trace_transactions (id, license_id, organization_id, tenant_id, session_id, trace_count,
    start_insertion_time, end_insertion_time, start_interval_time, end_interval_time, status, num_failed_send_attempts,
    transaction_type, received_at) VALUES (${version >= 3 ? uuidBytes("?") : "?"}, 'acme-prod', ?, ?, ?, ?, ?, ?, ?, ?, ?, 2, ?, '2026-11-01T10:06:00.000Z')`);
  for (const t of rows) {
    insert.run(
      t.id,
      ORG_ID,
      t.tenant_id,
      t.session_id,
      t.trace_count,
      t.start_insertion_time,
      t.end_insertion_time,
      t.start_interval_time,
      t.end_interval_time,
      t.status,
      t.transaction_type,
    );
  }
  db.close();
  return dir;
}

for (const version of [1, 2, 3, 4] as const) {
  test(`a beacon.db of schema ${version} is upgraded in place: rows, counts, report and dedup survive`, () => {
    const kept = [traceTransaction({ trace_count: 9 }), traceTransaction({ trace_count: 1 })];
    const dir = legacyBeacon(version, kept);
    const store = new BeaconStore(dir);
    try {
      assert.deepEqual(store.traceReport(), [
        { month: "2026-11", license_id: "acme-prod", organization_id: ORG_ID, transactions: 2, traces: 10 },
      ]);
      assert.deepEqual(store.transactionAttempts(), new Map(kept.map((t) => [t.id, 2])));
      assert.equal(store.insertTransactions("acme-prod", kept, new Date()), 0, "ids stored before the upgrade are still duplicates");
      assert.equal(store.insertTransactions("acme-prod", [traceTransaction()], new Date()), 1);
      assert.equal(store.insertTransactions("globex", kept, new Date()), 2, "another license's records with the same ids are its own");
    } finally {
      store.close();
    }
    const upgraded = new Database(join(dir, "beacon.db"), { readonly: true });
    assert.equal(upgraded.pragma("user_version", { simple: true }), 5);
    assert.deepEqual(upgraded.prepare("SELECT count(*) AS n FROM licenses").get(), { n: 0 }, "the licenses' table is there, empty");
    upgraded.close();
  });
}

test("one UUID is one transaction whatever its letter case", () => {
  const store = new BeaconStore(tempDir());
  try {
    const t = traceTransaction();
    assert.equal(store.insertTransactions("acme-prod", [t], new Date()), 1);
    assert.equal(store.insertTransactions("acme-prod", [{ ...t, id: t.id.toUpperCase() }], new Date()), 0);
    assert.deepEqual([...store.transactionAttempts().keys()], [t.id]);
  } finally {
    store.close();
  }
});
