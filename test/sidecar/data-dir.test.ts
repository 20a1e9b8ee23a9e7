import assert from "node:assert/strict";
import { copyFileSync, existsSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import pino from "pino";
import { MARKER_FILE, openOutbox } from "../../src/sidecar/storage/data-dir.ts";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { DataDirError } from "../../src/errors.ts";
import { tempDir } from "../helpers/processes.ts";

const logger = pino({ level: "silent" });
const marker = (dir: string) => JSON.parse(readFileSync(join(dir, MARKER_FILE), "utf8")) as { outboxId: string; createdAt: string };
const refusal = (code: string) => (err: unknown) => err instanceof DataDirError && err.code === code;

test("first start: a new outbox and a marker naming its id (kept inside the db too); later starts change neither", () => {
  const dir = join(tempDir(), "data");
  openOutbox(dir, { logger }).close();
  const first = marker(dir);
  assert.match(first.outboxId, /^[0-9a-f-]{36}$/);
  const db = new Database(join(dir, "outbox.db"), { readonly: true });
  assert.equal((db.prepare("SELECT value FROM kv WHERE key = 'outbox.id'").get() as { value: string }).value, first.outboxId);
  db.close();
  const outbox = openOutbox(dir, { logger });
  outbox.enqueue("billing", [{ recordId: "a", body: "{}" }]);
  outbox.close();
  assert.deepEqual(marker(dir), first);
});

test("an outbox from before markers is adopted as it is: records kept, marker written", () => {
  const dir = tempDir();
  const old = new Outbox(dir);
  old.enqueue("billing", [{ recordId: "a", body: "{}" }]);
  old.close();
  const outbox = openOutbox(dir, { logger });
  assert.equal(outbox.stats.counts("billing").pending, 1);
  outbox.close();
  assert.ok(marker(dir).outboxId);
});

test("a WAL left without its outbox.db (and no marker) is refused: its transactions belong to a file that is gone", () => {
  const source = tempDir();
  const live = new Database(join(source, "outbox.db"));
  live.pragma("journal_mode = WAL");
  live.exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
  const dir = tempDir();
  copyFileSync(join(source, "outbox.db-wal"), join(dir, "outbox.db-wal"));
  live.close();
  assert.throws(() => openOutbox(dir, { logger }), refusal("EGRESS_ERR_OUTBOX_MISSING"));
  assert.deepEqual(readdirSync(dir), ["outbox.db-wal"], "nothing created");
});

test("an outbox.db swapped in from another data dir is refused; --new-outbox moves it aside and starts afresh", () => {
  const [a, b] = [tempDir(), tempDir()];
  openOutbox(a, { logger }).close();
  const other = openOutbox(b, { logger });
  other.enqueue("billing", [{ recordId: "theirs", body: "{}" }]);
  other.close();
  copyFileSync(join(b, "outbox.db"), join(a, "outbox.db"));
  assert.throws(
    () => openOutbox(a, { logger }),
    (err: unknown) => refusal("EGRESS_ERR_OUTBOX_FOREIGN")(err) && /is not the outbox this data dir held/.test((err as Error).message),
  );

  const fresh = openOutbox(a, { logger, newOutbox: true });
  assert.equal(fresh.stats.counts("billing").pending, 0, "a new, empty outbox");
  fresh.close();
  const [aside] = readdirSync(a).filter((name) => name.startsWith("set-aside-"));
  assert.ok(aside, "what was there is kept, moved aside");
  assert.deepEqual(readFileSync(join(a, aside, "outbox.db")), readFileSync(join(b, "outbox.db")));
  assert.notEqual(marker(a).outboxId, marker(b).outboxId);
});

test("an unreadable marker is refused rather than trusted or ignored", () => {
  const dir = tempDir();
  openOutbox(dir, { logger }).close();
  writeFileSync(join(dir, MARKER_FILE), "{half a marker");
  assert.throws(() => openOutbox(dir, { logger }), refusal("EGRESS_ERR_DATA_DIR_MARKER"));
});

test("a file past the full-check size still gets the O(1) truncation check", () => {
  const dir = tempDir();
  const outbox = openOutbox(dir, { logger });
  outbox.enqueue(
    "billing",
    Array.from({ length: 200 }, (_, i) => ({ recordId: `r${i}`, body: "x".repeat(500) })),
  );
  outbox.close();
  const db = join(dir, "outbox.db");
  truncateSync(db, statSync(db).size - 4096);
  assert.throws(
    () => openOutbox(dir, { logger, fullCheckMaxBytes: 0 }),
    (err: unknown) => refusal("EGRESS_ERR_OUTBOX_CORRUPT")(err) && /truncated/.test((err as Error).message),
  );
  assert.ok(existsSync(db));
});
