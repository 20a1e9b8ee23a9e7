import assert from "node:assert/strict";
import { readlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import pino from "pino";
import { EgressError } from "../../src/errors.ts";
import { defaultHttpLimits } from "../../src/http/limits.ts";
import { HttpServer } from "../../src/http/server.ts";
import { registerOperatorRoutes } from "../../src/sidecar/local-api/operator-routes.ts";
import { billingCommits, registerTransactionsSource } from "../../src/sidecar/sources/transactions.ts";
import { DataDirSpace } from "../../src/sidecar/storage/disk-space.ts";
import { FileSync } from "../../src/sidecar/storage/file-sync.ts";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { OutboxFile } from "../../src/sidecar/storage/outbox-file.ts";
import { openOutboxToWrite } from "../../src/sidecar/storage/outbox-schema.ts";
import { traceTransactions } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/processes.ts";

/**
 * An fsync the test finishes by hand: each call waits in `pending` (with what `seen` read when it was called) until
 * the test resolves or fails it; after `release()`, later calls succeed at once (so a wrong extra sync makes a test
 * fail, not hang).
 */
function heldFsync(seen: () => unknown = () => undefined) {
  const pending: { fd: number; seen: unknown; done: () => void; fail: (err: Error) => void }[] = [];
  let held = true;
  const fsync = (fd: number) =>
    new Promise<void>((resolve, reject) => {
      pending.push({ fd, seen: seen(), done: resolve, fail: reject });
      if (!held) resolve();
    });
  return { pending, fsync, release: () => (held = false) };
}

const eio = () => Object.assign(new Error("I/O error"), { code: "EIO" });

const settled = async <T>(promise: Promise<T>) => {
  let state = "pending";
  promise.then(
    () => (state = "resolved"),
    () => (state = "rejected"),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return state;
};

function aFile(): string {
  const file = join(tempDir(), "outbox.db-wal");
  writeFileSync(file, "");
  return file;
}

test("file sync: a caller that comes while a sync runs waits for the next, begun after it; callers meanwhile share that one", async () => {
  const { pending, fsync } = heldFsync();
  const sync = new FileSync(aFile(), { fsync });
  const first = sync.sync();
  assert.equal(pending.length, 1, "an idle file syncs at once");
  // Two commits land while the first sync runs: it may have begun before them, so they wait for another.
  const second = sync.sync();
  const third = sync.sync();
  assert.equal(pending.length, 1, "no second sync while one runs");
  pending[0]!.done();
  assert.equal(await settled(first), "resolved");
  assert.equal(await settled(second), "pending", "the first sync does not count for a later commit");
  assert.equal(pending.length, 2, "the next sync starts once the first has ended");
  pending[1]!.done();
  assert.equal(await settled(second), "resolved");
  assert.equal(await settled(third), "resolved", "one sync for both");
  assert.equal(pending.length, 2);
  sync.close();
});

test("file sync: the first failure is final: the callers waiting for the next sync and every later one are refused, none tried", async () => {
  const failures: EgressError[] = [];
  const { pending, fsync, release } = heldFsync();
  const sync = new FileSync(aFile(), { fsync, onFailure: (failure) => failures.push(failure) });
  const first = sync.sync();
  const queued = sync.sync();
  release(); // were another sync tried, it would succeed: after a failed write-back the pages are clean, unwritten
  pending[0]!.fail(eio());
  for (const caller of [first, queued, sync.sync()]) {
    await assert.rejects(
      caller,
      (err: unknown) => err instanceof EgressError && err.code === "EGRESS_ERR_OUTBOX_SYNC" && /EIO/.test(err.message),
    );
  }
  assert.equal(pending.length, 1, "no sync after the failure");
  assert.equal(failures.length, 1, "told once");
  assert.match(sync.failure!.message, /until the sidecar restarts/);
  sync.close();
});

test("outbox: commitDurably syncs outbox.db's WAL after the commit and resolves only then; after a failed sync it commits nothing more", async () => {
  const dir = tempDir();
  let outbox: Outbox | undefined;
  const { pending, fsync } = heldFsync(() => outbox!.stats.counts("billing").pending);
  outbox = new Outbox(dir, { fsync });
  try {
    const committed = outbox.commitDurably(() => outbox!.enqueue("billing", [{ recordId: "a", body: "{}" }]));
    assert.equal(await settled(committed), "pending", "not on disk until the sync");
    assert.equal(pending.length, 1);
    assert.equal(pending[0]!.seen, 1, "the sync began after the commit");
    assert.equal(readlinkSync(`/proc/self/fd/${pending[0]!.fd}`), join(dir, "outbox.db-wal"), "the WAL's own descriptor");
    pending[0]!.done();
    assert.equal(await committed, 1);
    assert.equal(outbox.writeFailure, undefined);

    const unconfirmed = outbox.commitDurably(() => outbox!.enqueue("billing", [{ recordId: "b", body: "{}" }]));
    pending[1]!.fail(eio());
    await assert.rejects(unconfirmed, (err: unknown) => err instanceof EgressError && err.code === "EGRESS_ERR_OUTBOX_SYNC");
    assert.match(outbox.writeFailure ?? "", /fsync: EIO/);
    await assert.rejects(
      outbox.commitDurably(() => outbox!.enqueue("billing", [{ recordId: "c", body: "{}" }])),
      (err: unknown) => err instanceof EgressError && err.code === "EGRESS_ERR_OUTBOX_SYNC",
    );
    assert.equal(outbox.stats.counts("billing").pending, 2, "c was not committed");
    assert.equal(pending.length, 2, "nor synced");
  } finally {
    outbox.close();
  }
  // With the real fsync: what was committed is there after a reopen, and the next start takes intake again.
  const real = new Outbox(dir);
  try {
    assert.equal(await real.commitDurably(() => real.enqueue("billing", [{ recordId: "c", body: "{}" }])), 1);
  } finally {
    real.close();
  }
  const reopened = new Outbox(dir);
  assert.equal(reopened.stats.counts("billing").pending, 3);
  reopened.close();
});

test("POST /v1/transactions: 202 only after the disk confirms; after a write error every batch is 503, and /healthz and /readyz fail", async () => {
  const dir = tempDir();
  const { pending, fsync } = heldFsync();
  const outbox = new Outbox(dir, { fsync });
  const logger = pino({ level: "silent" });
  const space = new DataDirSpace(dir, { logger, reserveBytes: 0, statfs: () => ({ bavail: 2 ** 20, bsize: 4096 }) });
  const limits = { ...defaultHttpLimits, bodyBudgets: { billing: 2 ** 20 } };
  const app = new HttpServer({ logger, bodyLimit: { bytes: 2 ** 20 }, limits });
  registerTransactionsSource(app, outbox, () => {}, space);
  const unused = () => assert.fail("not read by the probes");
  registerOperatorRoutes(app, {
    status: unused,
    audit: unused as never,
    metrics: unused as never,
    ready: () => true,
    failure: () => outbox.writeFailure,
  });
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  const post = (body: unknown) =>
    fetch(`${url}/v1/transactions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const nextSync = async () => {
    const seen = pending.length;
    while (pending.length === seen) await new Promise((resolve) => setTimeout(resolve, 5));
    return pending.at(-1)!;
  };
  try {
    let answer = post({ trace_transactions: traceTransactions(3) });
    const sync = await nextSync();
    assert.equal(await settled(answer), "pending", "no 202 before the sync");
    sync.done();
    assert.equal((await answer).status, 202);
    assert.equal((await fetch(`${url}/healthz`)).status, 200);

    const batch = { trace_transactions: traceTransactions(2) };
    answer = post(batch);
    (await nextSync()).fail(eio());
    for (const refused of [await answer, await post(batch)]) {
      assert.equal(refused.status, 503, "the batch sent again is refused too, not answered as duplicates");
      const body = (await refused.json()) as { code: string; detail: string };
      assert.equal(body.code, "EGRESS_ERR_OUTBOX_SYNC");
      assert.match(body.detail, /fsync: EIO.*restarts/);
    }
    const health = await fetch(`${url}/healthz`);
    assert.equal(health.status, 503);
    assert.match(((await health.json()) as { reason: string }).reason, /write error/);
    assert.equal((await fetch(`${url}/readyz`)).status, 503);
  } finally {
    await app.close();
    outbox.close();
  }
});

test("billing commits: batches that shared an unconfirmed commit all fail, none re-committed alone (which would call its records duplicates)", async () => {
  const dir = tempDir();
  const { pending, fsync } = heldFsync();
  const outbox = new Outbox(dir, { fsync });
  try {
    const commits = billingCommits(outbox);
    const batch = (id: string) => [{ recordId: id, body: "{}" }];
    const together = [commits.submit(batch("a")), commits.submit(batch("b"))];
    while (pending.length === 0) await new Promise((resolve) => setImmediate(resolve));
    pending[0]!.fail(eio());
    for (const result of await Promise.allSettled(together)) {
      assert.equal(result.status, "rejected");
      assert.equal((result.reason as EgressError).code, "EGRESS_ERR_OUTBOX_SYNC");
    }
    assert.equal(pending.length, 1, "no commit alone after it");
    assert.equal(outbox.stats.counts("billing").pending, 2);
  } finally {
    outbox.close();
  }
});

test("outbox file: commitDurably leaves the connection at synchronous FULL, after a commit and after work that throws", async () => {
  const db = openOutboxToWrite(tempDir());
  const file = new OutboxFile(db, { durable: true, sync: { fsync: async () => {} } });
  const FULL = 2;
  try {
    assert.equal(await file.commitDurably(() => file.enqueue("billing", [{ recordId: "a", body: "{}" }])), 1);
    assert.equal(db.pragma("synchronous", { simple: true }), FULL, "usage and kv commits stay synced");
    await assert.rejects(
      file.commitDurably(() => {
        file.enqueue("billing", [{ recordId: "b", body: "{}" }]);
        throw new Error("a bug in the work");
      }),
      /a bug in the work/,
    );
    assert.equal(db.pragma("synchronous", { simple: true }), FULL);
    assert.equal(file.stats.counts("billing").pending, 1, "the work that threw committed nothing");
  } finally {
    file.close();
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
