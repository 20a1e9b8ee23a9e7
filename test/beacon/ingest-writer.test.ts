import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import { BeaconStore } from "../../src/beacon/store.ts";
import { IngestWriter } from "../../src/beacon/ingest-writer.ts";
import { DatabaseUnavailableError, databaseUnavailable } from "../../src/database-unavailable.ts";
import type { TraceTransaction } from "../../src/protocol/trace-transaction.ts";
import { traceTransactions } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/processes.ts";
import type { Logger } from "pino";

const NOW = new Date("2026-11-24T12:00:00Z");

/** A beacon.db with its schema, and a writer thread on it. */
function writerOnNewDatabase(options: { busyTimeoutMs?: number } = {}): { path: string; dataDir: string; writer: IngestWriter } {
  const dataDir = tempDir("ingest-writer-");
  new BeaconStore(dataDir).close();
  const path = join(dataDir, "beacon.db");
  return { path, dataDir, writer: new IngestWriter(path, options) };
}

const rowCount = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM trace_transactions").get() as { n: number }).n;
  } finally {
    db.close();
  }
};

test("ingests sent together are committed by the writer thread, each answered with its own new rows", async () => {
  const { path, writer } = writerOnNewDatabase();
  const batches = Array.from({ length: 20 }, () => traceTransactions(50));
  const answers = await Promise.all(batches.map((transactions) => writer.ingest([{ licenseId: "acme", transactions }], NOW)));
  assert.deepEqual(
    answers,
    batches.map(() => [50]),
  );
  assert.equal(rowCount(path), 1000, "on disk when answered, read from another connection");
  assert.deepEqual(await writer.ingest([{ licenseId: "acme", transactions: batches[3]! }], NOW), [0], "a resend inserts nothing");
  await writer.close();
});

test("close waits for the commits under way: every ingest sent before it is answered and on disk", async () => {
  const { path, writer } = writerOnNewDatabase();
  const pending = Array.from({ length: 30 }, () => writer.ingest([{ licenseId: "acme", transactions: traceTransactions(100) }], NOW));
  await writer.close();
  assert.deepEqual(
    await Promise.all(pending),
    pending.map(() => [100]),
  );
  assert.equal(rowCount(path), 3000);
});

test("a batch the database refuses fails alone: the batches that arrived with it are stored", async () => {
  const { path, writer } = writerOnNewDatabase();
  // The schema never lets such a record through (a missing count); sent past it, the NOT NULL column refuses it.
  const bad = [{ ...traceTransactions(1)[0]!, trace_count: null } as unknown as TraceTransaction];
  const good = traceTransactions(10);
  const [first, refused, second] = await Promise.allSettled([
    writer.ingest([{ licenseId: "acme", transactions: good.slice(0, 5) }], NOW),
    writer.ingest([{ licenseId: "acme", transactions: bad }], NOW),
    writer.ingest([{ licenseId: "acme", transactions: good.slice(5) }], NOW),
  ]);
  assert.deepEqual(first, { status: "fulfilled", value: [5] });
  assert.deepEqual(second, { status: "fulfilled", value: [5] });
  assert.equal(refused.status, "rejected");
  assert.match(String((refused as PromiseRejectedResult).reason.code), /^SQLITE_CONSTRAINT/);
  assert.equal(rowCount(path), 10);
  await writer.close();
});

test("a long write on another connection: the ingest fails as the database unavailable (a 503), stores nothing, and works after", async () => {
  const { path, writer } = writerOnNewDatabase({ busyTimeoutMs: 200 });
  const other = new Database(path);
  other.exec("BEGIN IMMEDIATE");
  const transactions = traceTransactions(5);
  // SQLITE_BUSY: the HTTP layer answers it 503 with Retry-After (databaseUnavailable), and the sidecar sends it again.
  await assert.rejects(writer.ingest([{ licenseId: "acme", transactions }], NOW), (err) => databaseUnavailable(err));
  other.exec("ROLLBACK");
  other.close();
  assert.equal(rowCount(path), 0);
  assert.deepEqual(await writer.ingest([{ licenseId: "acme", transactions }], NOW), [5]);
  await writer.close();
});

test("a writer thread that cannot open the database: 503s, no restart per request, ready once it opens", async () => {
  const dataDir = tempDir("ingest-writer-");
  let now = 0;
  const errors: unknown[] = [];
  const logger = { error: (...args: unknown[]) => errors.push(args), info: () => {} } as unknown as Logger;
  const writer = new IngestWriter(join(dataDir, "beacon.db"), { now: () => now, logger }); // no database there yet
  const batch = [{ licenseId: "acme", transactions: traceTransactions(2) }];
  await assert.rejects(writer.ready(), DatabaseUnavailableError, "not ready");
  // Ten simulated minutes of an ingest every 5 s, each refused as the database unavailable (a 503 the sidecar sends
  // again): a thread is tried again after 0.5 s doubling to 30 s (so about 120 an hour), not per request. One that
  // was started and could not open the file says why (SQLITE_CANTOPEN); the others are refused without one.
  let started = 0;
  for (; now < 600_000; now += 5_000) {
    const err = await writer.ingest(batch, NOW).then(
      () => assert.fail("stored with no database"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof DatabaseUnavailableError);
    if (/SQLITE_CANTOPEN/.test(err.message)) started++;
  }
  assert.ok(started > 10 && started <= 30, `${started} threads in ten minutes`);
  assert.equal(errors.length, 1, "logged once for the outage");
  new BeaconStore(dataDir).close();
  now += 30_000; // past the longest wait
  await writer.ready();
  assert.deepEqual(await writer.ingest(batch, NOW), [2]);
  await writer.close();
  await assert.rejects(writer.ingest(batch, NOW), DatabaseUnavailableError, "closed: refused, no new thread");
});

test("an OTLP request's bytes move to the thread when they own their buffer, and are copied when they are a view into a shared one", async () => {
  const { path, writer } = writerOnNewDatabase();
  const text = JSON.stringify({ resourceMetrics: [], note: "x".repeat(10_000) });
  const owned = Buffer.from(new TextEncoder().encode(text).buffer); // its own ArrayBuffer, exactly its size
  const pooled = Buffer.from('{"resourceLogs":[]}'); // a slice of Node's shared pool
  const pool = pooled.buffer;
  await writer.insertOtlp({ signal: "metrics", licenseId: "acme", itemCount: 1, text: owned, forward: false }, NOW);
  await writer.insertOtlp({ signal: "logs", licenseId: "acme", itemCount: 1, text: pooled, forward: false }, NOW);
  await writer.close();
  assert.equal(owned.byteLength, 0, "moved: nothing copied, the route is done with it");
  assert.equal(pooled.toString(), '{"resourceLogs":[]}', "copied: the pool's other users keep their bytes");
  assert.ok(pool.byteLength > pooled.byteLength, "the pool was not moved whole");
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.prepare("SELECT typeof(body) AS type, body FROM otlp_batches ORDER BY seq").all();
    assert.deepEqual(rows, [
      { type: "text", body: text },
      { type: "text", body: '{"resourceLogs":[]}' },
    ]);
  } finally {
    db.close();
  }
});
