import assert from "node:assert/strict";
import { rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import { bodyText, Outbox, outboxPath } from "../../src/sidecar/storage/outbox.ts";
import { openOutboxToRead, openOutboxToWrite } from "../../src/sidecar/storage/outbox-schema.ts";
import { tempDir } from "../helpers/processes.ts";

test("outbox: claims oldest first, keeps ids once, counts failed attempts, dead-letters, and prunes only old completed rows", () => {
  let now = 1_000;
  const dir = tempDir();
  const outbox = new Outbox(dir, { now: () => now });
  const records = Array.from({ length: 5 }, (_, i) => ({ recordId: `id-${i}`, body: `{"n":${i}}` }));
  assert.equal(outbox.enqueue("billing", records), 5);
  assert.equal(outbox.enqueue("billing", records.slice(0, 2)), 0, "ids already held are skipped");

  const first = outbox.claim("billing", 3);
  assert.deepEqual(
    first.map((r) => r.recordId),
    ["id-0", "id-1", "id-2"],
  );
  outbox.fail("billing", [first[0]!], "503");
  assert.equal(first[0]!.attempts, 1, "the record held for a retry carries the stored count, which its next send reports");
  outbox.deadLetter("billing", [first[1]!.seq], "422 bad tenant");
  outbox.ack("billing", [first[2]!.seq]);
  const again = outbox.claim("billing", 10);
  assert.deepEqual(
    again.map((r) => [r.recordId, r.attempts]),
    [
      ["id-0", 1],
      ["id-3", 0],
      ["id-4", 0],
    ],
  );
  assert.deepEqual(outbox.stats.deadLetters("billing"), [{ recordId: "id-1", error: "422 bad tenant", attempts: 0 }]);
  assert.equal(outbox.stats.counts("billing").sending, 3);
  outbox.close();

  // A crash while records are being sent: the file holds them as pending (claims are kept in memory), and one an
  // older sidecar wrote as 'sending' is handed back at start. Nothing lost.
  const older = new Database(outboxPath(dir));
  older.prepare("UPDATE outbox SET state = 'sending' WHERE record_id = 'id-0'").run();
  older.close();
  now = 10_000;
  const reopened = new Outbox(dir, { now: () => now });
  const counts = reopened.stats.counts("billing");
  assert.deepEqual([counts.pending, counts.sending, counts.completed, counts.failed], [3, 0, 1, 1]);
  assert.equal(reopened.history.pruneCompleted(500), 0, "completed after the cut-off: kept");
  assert.equal(reopened.history.pruneCompleted(now), 1);
  assert.equal(reopened.stats.counts("billing").failed, 1, "dead letters are never pruned");
  reopened.close();
});

test("outbox: telemetry under a shared byte cap drops the oldest undelivered records first, never billing, never one being sent", () => {
  const outbox = new Outbox(tempDir());
  const cap = { streams: ["metrics", "traces", "logs"] as const, maxBytes: 1_100 };
  const body = (tag: string) => JSON.stringify({ tag, pad: "x".repeat(180) }); // ~200 bytes
  outbox.enqueue("billing", [{ recordId: "b-1", body: "x".repeat(5_000) }]);
  for (const tag of ["m0", "m1", "m2"]) outbox.enqueueWithinCap("metrics", [{ body: body(tag) }], cap);
  const inFlight = outbox.claim("metrics", 1);
  assert.match(bodyText(inFlight[0]!), /"m0"/);
  outbox.enqueueWithinCap("traces", [{ body: body("t0") }], cap);
  outbox.enqueueWithinCap("logs", [{ body: body("l0") }], cap);
  const result = outbox.enqueueWithinCap("metrics", [{ body: body("m3") }, { body: body("m4") }], cap);
  assert.equal(result.inserted, 2);
  assert.equal(result.droppedRecords, 2, "room for two new records: the two oldest waiting ones went");
  assert.ok(result.droppedBytes >= 400);
  const left = ["metrics", "traces", "logs"].flatMap((s) =>
    [...outbox.history.records(s as "metrics")].map((r) => JSON.parse(bodyText(r)).tag),
  );
  assert.deepEqual(left.sort(), ["l0", "m0", "m3", "m4", "t0"], "m1 and m2 (oldest pending) dropped; m0 is being sent and stays");
  assert.equal(outbox.stats.counts("billing").pending, 1, "billing is outside the cap");

  const tooBig = outbox.enqueueWithinCap("logs", [{ body: "y".repeat(2_000) }], cap);
  assert.deepEqual([tooBig.inserted, tooBig.droppedRecords], [0, 1], "a request larger than the whole cap is not stored");
  outbox.close();
});

test("outbox: claims stop at about maxBytes but always take one record; remove and discard delete", () => {
  const outbox = new Outbox(tempDir());
  outbox.enqueue(
    "logs",
    ["a", "b", "c", "d"].map((tag) => ({ body: JSON.stringify({ tag, pad: "x".repeat(90) }) })),
  );
  const first = outbox.claim("logs", 100, 250);
  assert.equal(first.length, 2, "two ~100-byte records fit in 250 bytes");
  assert.equal(outbox.claim("logs", 100, 10).length, 1, "a record larger than maxBytes still goes, alone");
  outbox.remove(
    "logs",
    first.map((r) => r.seq),
  );
  assert.deepEqual(
    [outbox.stats.counts("logs").completed, outbox.stats.counts("logs").delivered, outbox.stats.pendingHead("logs", 10).count],
    [0, 2, 1],
  );
  assert.equal(outbox.discard("logs"), 2, "the pending and the sending one");
  assert.deepEqual(outbox.stats.counts("logs"), { pending: 0, sending: 0, completed: 0, failed: 0, oldestPendingAt: null, delivered: 2 });
  outbox.close();
});

/** An outbox.db as an older sidecar left it: its DDL, rows written by `fill`, and its schema version. */
function legacyOutbox(version: number, ddl: string, fill: (db: Database.Database) => void): string {
  const dir = tempDir();
  const db = new Database(join(dir, "outbox.db"));
  db.exec(`${ddl}; CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);`);
  fill(db);
  db.pragma(`user_version = ${version}`);
  db.close();
  return dir;
}

test("outbox: a version-1 file (before byte sizes) is upgraded in place and keeps its records", () => {
  const dir = legacyOutbox(
    1,
    `CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL, record_id TEXT, body TEXT NOT NULL,
      state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0, enqueued_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL, last_error TEXT)`,
    (db) =>
      db
        .prepare("INSERT INTO outbox (stream, record_id, body, enqueued_at, updated_at) VALUES ('billing', 'b-1', ?, 1, 1)")
        .run("é".repeat(10)),
  );
  const outbox = new Outbox(dir);
  assert.deepEqual(
    outbox.stats.pendingHead("billing", 10),
    { count: 1, bytes: 20, oldestAt: 1 },
    "size backfilled in bytes, not characters",
  );
  outbox.close();
});

test("outbox: a version-2 file (narrower send-path index) is upgraded in place and still sends its records in order", () => {
  const dir = legacyOutbox(
    2,
    `CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL, record_id TEXT, body TEXT NOT NULL,
      state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0, size INTEGER NOT NULL DEFAULT 0,
      enqueued_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, last_error TEXT);
     CREATE INDEX outbox_by_state ON outbox (stream, state, seq)`,
    (db) => {
      const insert = db.prepare(
        "INSERT INTO outbox (stream, record_id, body, size, enqueued_at, updated_at) VALUES ('billing', ?, ?, 3, ?, ?)",
      );
      for (const n of [1, 2, 3]) insert.run(`b-${n}`, `"${n}"`, n, n);
    },
  );
  const outbox = new Outbox(dir);
  assert.deepEqual(outbox.stats.pendingHead("billing", 10), { count: 3, bytes: 9, oldestAt: 1 });
  assert.deepEqual(
    outbox.claim("billing", 2).map((r) => r.recordId),
    ["b-1", "b-2"],
  );
  outbox.close();
  const reopened = new Database(join(dir, "outbox.db"), { readonly: true });
  assert.equal(reopened.pragma("user_version", { simple: true }), 3);
  assert.equal(reopened.pragma("page_size", { simple: true }), 4096, "an older file keeps its pages (no rewrite at start)");
  reopened.close();
});

test("outbox: a version-3 file keeps its ids as text (converting them would rewrite every row at start): ids held stay held, new ones are text too, each reads back as sent", () => {
  const uuids = ["2d3c4b5a-6978-4abc-8def-0123456789ab", "b8e5a573-541f-487e-beeb-022d8413530f"];
  const texts = ["2D3C4B5A-6978-4ABC-8DEF-0123456789AB", "2026-11-01T10:00:00.000Z"];
  const dir = legacyOutbox(
    3,
    `CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL, record_id TEXT, body TEXT NOT NULL,
      state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0, size INTEGER NOT NULL DEFAULT 0,
      enqueued_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, last_error TEXT);
     CREATE UNIQUE INDEX outbox_record_id ON outbox (stream, record_id) WHERE record_id IS NOT NULL;
     CREATE INDEX outbox_by_state ON outbox (stream, state, seq, size, enqueued_at)`,
    (db) => {
      const insert = db.prepare(
        "INSERT INTO outbox (stream, record_id, body, size, enqueued_at, updated_at) VALUES ('billing', ?, '{}', 2, 1, 1)",
      );
      for (const id of [uuids[0], texts[0]]) insert.run(id);
    },
  );
  const outbox = new Outbox(dir);
  const enqueued = outbox.enqueue(
    "billing",
    [...uuids, ...texts].map((recordId) => ({ recordId, body: "{}" })),
  );
  assert.equal(enqueued, 2, "the ids held before are still held; the others are new");
  const ids = [uuids[0], texts[0], uuids[1], texts[1]];
  const claimed = outbox.claim("billing", 10);
  assert.deepEqual(
    claimed.map((r) => r.recordId),
    ids,
  );
  outbox.deadLetter("billing", [claimed[2]!.seq], "refused");
  assert.deepEqual(
    outbox.stats.deadLetters("billing", 5).map((d) => d.recordId),
    [uuids[1]],
  );
  assert.deepEqual(
    [...outbox.history.records("billing")].map((r) => r.recordId),
    ids,
  );
  outbox.close();
  const reopened = new Database(join(dir, "outbox.db"), { readonly: true });
  assert.deepEqual(reopened.prepare("SELECT DISTINCT typeof(record_id) AS type FROM outbox").all(), [{ type: "text" }]);
  assert.equal(reopened.pragma("user_version", { simple: true }), 3);
  reopened.close();
});

test("outbox: a new outbox.db keeps a canonical UUID id as its 16 bytes, any other id as text (schema version 4); a new telemetry.db stays version 3", () => {
  const dir = tempDir();
  const outbox = new Outbox(dir);
  const ids = ["b8e5a573-541f-487e-beeb-022d8413530f", "B8E5A573-541F-487E-BEEB-022D8413530F", "2026-11-01T10:00:00.000Z"];
  assert.equal(
    outbox.enqueue(
      "billing",
      ids.map((recordId) => ({ recordId, body: "{}" })),
    ),
    3,
  );
  assert.equal(
    outbox.enqueue(
      "billing",
      ids.map((recordId) => ({ recordId, body: "{}" })),
    ),
    0,
  );
  assert.deepEqual(
    outbox.claim("billing", 10).map((r) => r.recordId),
    ids,
  );
  outbox.close();
  const reopened = new Database(join(dir, "outbox.db"), { readonly: true });
  assert.deepEqual(reopened.prepare("SELECT typeof(record_id) AS type, length(record_id) AS length FROM outbox ORDER BY seq").all(), [
    { type: "blob", length: 16 },
    { type: "text", length: 36 },
    { type: "text", length: 24 },
  ]);
  assert.equal(reopened.pragma("user_version", { simple: true }), 4);
  reopened.close();
  const telemetry = new Database(join(dir, "telemetry.db"), { readonly: true });
  assert.equal(
    telemetry.pragma("user_version", { simple: true }),
    3,
    "telemetry.db holds no ids: the sidecar before version 4 still opens it",
  );
  telemetry.close();
});

test("outbox: export's reader takes a file of version 3 (ids as text) or 4, and refuses an older one it cannot read", () => {
  const table = "CREATE TABLE outbox (seq INTEGER PRIMARY KEY, stream TEXT, record_id TEXT, body TEXT)";
  for (const version of [3, 4]) openOutboxToRead(legacyOutbox(version, table, () => {})).close();
  assert.throws(() => openOutboxToRead(legacyOutbox(2, table, () => {})), {
    code: "EGRESS_ERR_OUTBOX_VERSION",
    message: /schema version 2, this tool reads 3 and 4/,
  });
});

test("outbox: a new file's write-ahead log stays near 4 MiB however much is written, with its larger pages", () => {
  const dir = tempDir();
  const outbox = new Outbox(dir);
  const body = JSON.stringify({ pad: "x".repeat(20_000) });
  for (let commit = 0; commit < 100; commit++) {
    outbox.enqueue(
      "billing",
      Array.from({ length: 25 }, (_, i) => ({ recordId: `r-${commit}-${i}`, body })),
    );
  }
  const wal = statSync(`${outboxPath(dir)}-wal`).size;
  outbox.close();
  const reopened = new Database(outboxPath(dir), { readonly: true });
  assert.equal(reopened.pragma("page_size", { simple: true }), 16384);
  reopened.close();
  // 50 MB went through it; the data dir's delivery reserve (16 MiB) must hold the log with room to spare.
  assert.ok(wal < 5 * 2 ** 20, `WAL grew to ${(wal / 2 ** 20).toFixed(1)} MiB`);
});

test("outbox: requests enqueued together under the cap end as if enqueued one after the other", () => {
  const cap = { streams: ["metrics", "traces", "logs"] as const, maxBytes: 1_000 };
  const body = (tag: string, size: number) => Buffer.from(JSON.stringify({ tag, pad: "x".repeat(size) }));
  const entries = [
    { stream: "metrics" as const, records: [{ body: body("a", 300) }] },
    { stream: "traces" as const, records: [{ body: body("b", 400) }, { body: body("c", 100) }] },
    { stream: "logs" as const, records: [{ body: body("too-big", 1_200) }] },
    { stream: "metrics" as const, records: [{ body: body("d", 350) }] },
    { stream: "logs" as const, records: [{ body: body("e", 200) }] },
  ];
  const held = (outbox: Outbox) =>
    ["metrics", "traces", "logs"].flatMap((s) =>
      [...outbox.history.records(s as "metrics")].map((r) => `${s}:${JSON.parse(bodyText(r)).tag}`),
    );
  const oneByOne = new Outbox(tempDir());
  const alone = entries.map((e) => oneByOne.enqueueWithinCap(e.stream, e.records, cap));
  const grouped = new Outbox(tempDir());
  const together = grouped.enqueueAllWithinCap(entries, cap);
  assert.deepEqual(together, alone);
  assert.deepEqual(held(grouped).sort(), held(oneByOne).sort());
  assert.ok(alone.some((r) => r.droppedRecords > 0) && alone.some((r) => r.inserted === 0), "the case drops old records and refuses one");
  oneByOne.close();
  grouped.close();
});

test("outbox: the OTLP signals' records are kept in telemetry.db, billing and usage in outbox.db; each survives a reopen", () => {
  const dir = tempDir();
  const outbox = new Outbox(dir);
  outbox.enqueue("billing", [{ recordId: "b-1", body: "{}" }]);
  outbox.enqueue("usage", [{ recordId: "u-1", body: "{}" }]);
  outbox.enqueueWithinCap("metrics", [{ body: Buffer.from('{"resourceMetrics":[]}') }], {
    streams: ["metrics", "traces", "logs"],
    maxBytes: 1_000,
  });
  outbox.enqueue("logs", [{ body: "{}" }]);
  outbox.close();
  const streamsIn = (file: string) => {
    const db = new Database(join(dir, file), { readonly: true });
    try {
      return (db.prepare("SELECT stream FROM outbox ORDER BY stream").all() as { stream: string }[]).map((r) => r.stream);
    } finally {
      db.close();
    }
  };
  assert.deepEqual(streamsIn("outbox.db"), ["billing", "usage"]);
  assert.deepEqual(streamsIn("telemetry.db"), ["logs", "metrics"]);
  const reopened = new Outbox(dir);
  assert.deepEqual(
    ["billing", "usage", "metrics", "logs"].map((s) => reopened.stats.counts(s as "billing").pending),
    [1, 1, 1, 1],
  );
  reopened.close();
});

test("outbox: an older outbox.db's telemetry moves to telemetry.db once, with its states, attempts and delivered counts; a move cut short resumes without doubles", () => {
  const dir = tempDir();
  const seed = new Outbox(dir);
  seed.close();
  // What an older sidecar left: telemetry rows (one failed twice, one dead-lettered) and counts in outbox.db.
  const old = new Database(outboxPath(dir));
  const insert = old.prepare(
    "INSERT INTO outbox (stream, record_id, body, state, attempts, size, enqueued_at, updated_at, last_error) VALUES (?, ?, ?, ?, ?, ?, 5, 6, ?)",
  );
  insert.run("billing", "b-1", "{}", "pending", 0, 2, null);
  insert.run("metrics", null, Buffer.from('{"m":1}'), "pending", 2, 7, "503");
  insert.run("traces", null, Buffer.from('{"t":1}'), "failed", 1, 7, "400 refused");
  insert.run("logs", null, Buffer.from('{"l":1}'), "pending", 0, 7, null);
  old.prepare("INSERT INTO kv (key, value) VALUES ('delivered.metrics', '40'), ('delivered.billing', '9')").run();
  old.close();
  rmSync(join(dir, "telemetry.db"));

  const outbox = new Outbox(dir);
  assert.deepEqual(outbox.stats.counts("metrics"), { pending: 1, sending: 0, completed: 0, failed: 0, oldestPendingAt: 5, delivered: 40 });
  assert.deepEqual(outbox.stats.deadLetters("traces"), [{ recordId: null, error: "400 refused", attempts: 1 }]);
  assert.deepEqual(
    outbox.claim("metrics", 10).map((r) => [bodyText(r), r.attempts]),
    [['{"m":1}', 2]],
  );
  assert.equal(outbox.stats.counts("billing").delivered, 9, "billing's own count stays in outbox.db");
  outbox.close();
  const main = new Database(outboxPath(dir), { readonly: true });
  assert.deepEqual(main.prepare("SELECT stream FROM outbox").all(), [{ stream: "billing" }], "outbox.db keeps billing only");
  main.close();

  // A crash after the copy committed and before outbox.db let go: the rows are in both files at the next start.
  const again = new Database(outboxPath(dir));
  again
    .prepare(
      "INSERT INTO outbox (seq, stream, body, state, attempts, size, enqueued_at, updated_at) VALUES (4, 'logs', ?, 'pending', 0, 7, 5, 6)",
    )
    .run(Buffer.from('{"l":1}'));
  again.prepare("INSERT INTO kv (key, value) VALUES ('delivered.metrics', '40')").run();
  again.close();
  const resumed = new Outbox(dir);
  assert.equal(resumed.stats.counts("logs").pending, 1, "the log record once, not twice");
  assert.equal(resumed.stats.counts("metrics").delivered, 40, "the count once");
  resumed.close();
});

test("outbox: the pending head stops reading at a batch's bytes, skips what is being sent, and counts as before without a byte bound", () => {
  let now = 1;
  const outbox = new Outbox(tempDir(), { now: () => now });
  try {
    for (let i = 0; i < 10; i++) {
      now = 100 + i;
      outbox.enqueueWithinCap("metrics", [{ body: "x".repeat(100) }], { streams: ["metrics"], maxBytes: 2 ** 20 });
    }
    assert.deepEqual(outbox.stats.pendingHead("metrics", 1000, 250), { count: 3, bytes: 300, oldestAt: 100 }, "stops at the third");
    assert.deepEqual(outbox.stats.pendingHead("metrics", 1000), { count: 10, bytes: 1000, oldestAt: 100 });
    assert.deepEqual(outbox.stats.pendingHead("metrics", 4, 10_000), { count: 4, bytes: 400, oldestAt: 100 }, "and at the count");
    const [first, second] = outbox.claim("metrics", 2);
    assert.deepEqual(outbox.stats.pendingHead("metrics", 1000, 250), { count: 3, bytes: 300, oldestAt: 102 }, "after those being sent");
    outbox.release("metrics", [first!.seq]); // pending again, before the one still being sent
    assert.deepEqual(outbox.stats.pendingHead("metrics", 1000, 250), { count: 3, bytes: 300, oldestAt: 100 }, "the 1st, 3rd and 4th");
    assert.deepEqual(outbox.stats.pendingHead("metrics", 1000), { count: 9, bytes: 900, oldestAt: 100 }, "all but the 2nd");
    assert.ok(second);
    assert.deepEqual(outbox.stats.pendingHead("metrics", 0, 250), { count: 0, bytes: 0, oldestAt: null });
    // Many small records (past the rows read one by one): the same answer, summed by SQLite.
    for (let i = 0; i < 100; i++) outbox.enqueueWithinCap("logs", [{ body: "0123456789" }], { streams: ["logs"], maxBytes: 2 ** 20 });
    assert.deepEqual(outbox.stats.pendingHead("logs", 1000, 100_000), { count: 100, bytes: 1000, oldestAt: now });
    assert.deepEqual(outbox.stats.pendingHead("logs", 70, 100_000), { count: 70, bytes: 700, oldestAt: now });
    assert.ok(outbox.stats.pendingHead("logs", 1000, 905).bytes >= 905, "a batch's bytes are there: due");
  } finally {
    outbox.close();
  }
});

test("outbox: outbox.db has no telemetry size index (an older one loses it), telemetry.db keeps it", () => {
  const dir = tempDir();
  const older = openOutboxToWrite(dir);
  older.exec("CREATE INDEX outbox_telemetry_size ON outbox (stream, state, size) WHERE stream IN ('metrics', 'traces', 'logs')");
  older.close();
  new Outbox(dir).close();
  const indexes = (file: string) => {
    const db = new Database(join(dir, file), { readonly: true });
    const names = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'outbox_%'").pluck().all();
    db.close();
    return names;
  };
  assert.ok(!indexes("outbox.db").includes("outbox_telemetry_size"));
  assert.ok(indexes("telemetry.db").includes("outbox_telemetry_size"));
});

test("outbox: records are inserted many to a statement; at every batch length each new id is stored once, in order, with its attempts and size", () => {
  const dir = tempDir();
  const outbox = new Outbox(dir, { now: () => 5_000 });
  let sent = 0;
  const stored: { record_id: string; attempts: number; size: number; bytes: number; enqueued_at: number }[] = [];
  for (const length of [0, 1, 49, 50, 51, 100, 149]) {
    // Every fifth id is one sent before (in this batch or an earlier one), so duplicates straddle the statements.
    const ids = Array.from({ length }, (_, i) => (i % 5 === 4 ? `id-${(sent + i) >> 1}` : `id-${sent + i}`));
    const records = ids.map((recordId, i) => ({ recordId, body: `{"id":"${recordId}","pad":"${"é".repeat(i)}"}`, attempts: i }));
    const before = stored.length;
    for (const r of records) {
      if (stored.some((s) => s.record_id === r.recordId)) continue;
      const bytes = Buffer.byteLength(r.body);
      stored.push({ record_id: r.recordId, attempts: r.attempts, size: bytes, bytes, enqueued_at: 5_000 });
    }
    assert.equal(outbox.enqueue("billing", records), stored.length - before, `length ${length}`);
    sent += length;
  }
  outbox.close();
  const db = new Database(outboxPath(dir), { readonly: true });
  const rows = db
    .prepare(
      "SELECT record_id, attempts, size, length(CAST(body AS BLOB)) AS bytes, enqueued_at FROM outbox WHERE stream = 'billing' ORDER BY seq",
    )
    .all();
  db.close();
  assert.deepEqual(rows, stored);
});
