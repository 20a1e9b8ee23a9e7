import assert from "node:assert/strict";
import { copyFileSync, existsSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import pino from "pino";
import { bodyText, Outbox, outboxPath } from "../../src/sidecar/storage/outbox.ts";
import { replaceDamagedTelemetry } from "../../src/sidecar/storage/telemetry-check.ts";
import { tempDir } from "../helpers/processes.ts";

const CAP = { streams: ["metrics", "traces", "logs"] as const, maxBytes: 64 * 2 ** 20 };

/** A data dir whose telemetry.db holds `count` metrics records of about 20 KB (billing: one record). */
function withTelemetry(count: number): string {
  const dir = tempDir();
  const outbox = new Outbox(dir);
  outbox.enqueue("billing", [{ recordId: "b-1", body: "{}" }]);
  const body = Buffer.from(JSON.stringify({ resourceMetrics: [], pad: "x".repeat(20_000) }));
  for (let i = 0; i < count; i++) outbox.enqueueWithinCap("metrics", [{ body }], CAP);
  outbox.close();
  return dir;
}

/** What a power cut mid-checkpoint can leave: a run of pages in the middle of the file overwritten. */
function tear(file: string): void {
  const bytes = readFileSync(file);
  bytes.fill("torn page ", 16_384 * 3, Math.min(bytes.length, 16_384 * 6));
  writeFileSync(file, bytes);
}

function logged() {
  const lines: string[] = [];
  return { logger: pino({ level: "info" }, { write: (line: string) => lines.push(line) }), lines };
}

test("telemetry.db check at start: a healthy file is kept; a torn, truncated or foreign one is replaced with a warning", () => {
  for (const damage of ["none", "torn", "truncated", "not a database"] as const) {
    const dir = withTelemetry(40);
    const file = join(dir, "telemetry.db");
    if (damage === "torn") tear(file);
    if (damage === "truncated") truncateSync(file, Math.floor(statSync(file).size / 2));
    if (damage === "not a database") writeFileSync(file, Buffer.alloc(statSync(file).size, "just bytes "));
    const { logger, lines } = logged();
    replaceDamagedTelemetry(dir, logger, 32 * 2 ** 20);
    const outbox = new Outbox(dir);
    try {
      assert.equal(outbox.stats.counts("billing").pending, 1, `${damage}: billing untouched`);
      assert.equal(outbox.stats.counts("metrics").pending, damage === "none" ? 40 : 0, `${damage}: telemetry kept or replaced`);
      assert.equal(
        lines.some((line) => /telemetry\.db was damaged/.test(line)),
        damage !== "none",
        `${damage}: warned`,
      );
    } finally {
      outbox.close();
    }
  }
});

test("telemetry.db check at start: a file the last sidecar did not close is read in full whatever its size; a clean one over the limit is not", () => {
  // Left "open" (the sidecar was killed, or the power went): even over the full-check limit the torn pages are found.
  const crashed = withTelemetry(40);
  const file = join(crashed, "telemetry.db");
  const db = new Database(outboxPath(crashed));
  assert.equal(db.prepare("SELECT value FROM kv WHERE key = 'telemetry.state'").pluck().get(), "clean", "a clean stop says so");
  db.prepare("UPDATE kv SET value = 'open' WHERE key = 'telemetry.state'").run(); // as a sidecar that never stopped left it
  db.close();
  tear(file);
  const open = logged();
  replaceDamagedTelemetry(crashed, open.logger, 1);
  assert.ok(
    open.lines.some((line) => /quick_check.*telemetry\.db was damaged/.test(line)),
    "found by the full check",
  );
  assert.ok(!existsSync(file), "replaced");

  // Closed cleanly (its last checkpoint synced): over the limit only the header and the last page are read.
  const clean = withTelemetry(40);
  tear(join(clean, "telemetry.db"));
  const quiet = logged();
  replaceDamagedTelemetry(clean, quiet.logger, 1);
  assert.equal(quiet.lines.length, 0, "not read in full: a start after a clean stop is not slowed by a large file");
  assert.ok(existsSync(join(clean, "telemetry.db")));
});

test("billing's tools read outbox.db whatever state telemetry.db is in: export and preview see an empty telemetry queue", () => {
  for (const damage of ["missing", "empty", "not a database"] as const) {
    const dir = withTelemetry(3);
    const file = join(dir, "telemetry.db");
    if (damage === "missing") for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
    if (damage === "empty") truncateSync(file, 0);
    if (damage === "not a database") writeFileSync(file, Buffer.alloc(50_000, "just bytes "));
    const reader = new Outbox(dir, { readonly: true });
    try {
      assert.deepEqual(
        [...reader.history.records("billing")].map((r) => r.recordId),
        ["b-1"],
        damage,
      );
      assert.deepEqual(reader.peek("metrics", 10), [], damage);
    } finally {
      reader.close();
    }
  }
});

test("telemetry moved from an older outbox.db is in telemetry.db's own file at once, not only in its log: a power cut right after keeps it", () => {
  const dir = tempDir();
  new Outbox(dir).close();
  const old = new Database(outboxPath(dir));
  const insert = old.prepare("INSERT INTO outbox (stream, body, size, enqueued_at, updated_at) VALUES ('metrics', ?, 9, 1, 1)");
  for (let i = 0; i < 50; i++) insert.run(Buffer.from(`{"n":${i}}`));
  old.close();
  const outbox = new Outbox(dir);
  // What the disk holds if the power goes now: telemetry.db without its -wal.
  const cut = join(tempDir(), "telemetry.db");
  copyFileSync(join(dir, "telemetry.db"), cut);
  outbox.close();
  const survivor = new Database(cut, { readonly: true });
  try {
    const rows = survivor.prepare("SELECT body FROM outbox ORDER BY seq").all() as { body: Buffer }[];
    assert.equal(rows.length, 50);
    assert.equal(bodyText({ body: rows[49]!.body }), '{"n":49}');
  } finally {
    survivor.close();
  }
});

test("telemetry.db is marked clean only after a complete synced checkpoint: a reader holding its log at the stop leaves it to be checked in full", () => {
  const dir = withTelemetry(5);
  const outbox = new Outbox(dir);
  outbox.enqueueWithinCap("metrics", [{ body: Buffer.from('{"resourceMetrics":[]}') }], CAP);
  const reader = new Database(join(dir, "telemetry.db"), { readonly: true });
  reader.exec("BEGIN");
  reader.prepare("SELECT count(*) FROM outbox").get(); // a tool's read, open across the stop
  outbox.close();
  reader.close();
  const state = new Database(outboxPath(dir), { readonly: true });
  try {
    assert.equal(state.prepare("SELECT value FROM kv WHERE key = 'telemetry.state'").pluck().get(), "open");
  } finally {
    state.close();
  }
});

test("a telemetry.db without its table (cut off before its first commit reached the disk) is replaced, not a refused start", () => {
  const dir = withTelemetry(1);
  const file = join(dir, "telemetry.db");
  rmSync(file);
  const stray = new Database(file);
  stray.exec("CREATE TABLE unrelated (a)");
  stray.close();
  const { logger, lines } = logged();
  replaceDamagedTelemetry(dir, logger, 32 * 2 ** 20);
  assert.ok(lines.some((line) => /no outbox table.*telemetry\.db was damaged/.test(line)));
  const outbox = new Outbox(dir);
  outbox.enqueue("logs", [{ body: "{}" }]);
  assert.equal(outbox.stats.counts("logs").pending, 1);
  outbox.close();
});
