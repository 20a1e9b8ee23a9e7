import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import pino from "pino";
import { EgressError } from "../../src/errors.ts";
import { defaultHttpLimits } from "../../src/http/limits.ts";
import { HttpServer } from "../../src/http/server.ts";
import { billingCommits, registerTransactionsSource } from "../../src/sidecar/sources/transactions.ts";
import { DataDirSpace } from "../../src/sidecar/storage/disk-space.ts";
import { FileSync } from "../../src/sidecar/storage/file-sync.ts";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { traceTransactions } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/processes.ts";

/**
 * An fsync the test finishes by hand: each call waits in `pending` until the test resolves or fails it; after
 * `release()`, later calls succeed at once (so a wrong extra sync makes a test fail, not hang).
 */
function heldFsync() {
  const pending: { path: string; done: () => void; fail: (err: Error) => void }[] = [];
  let held = true;
  const fsync = (path: string) =>
    new Promise<void>((resolve, reject) => {
      pending.push({ path, done: resolve, fail: reject });
      if (!held) resolve();
    });
  return { pending, fsync, release: () => (held = false) };
}

const settled = async <T>(promise: Promise<T>) => {
  let state = "pending";
  promise.then(
    () => (state = "resolved"),
    () => (state = "rejected"),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return state;
};

test("file sync: a caller that comes while a sync runs waits for the next, begun after it; callers meanwhile share that one", async () => {
  const { pending, fsync } = heldFsync();
  const sync = new FileSync("/data/outbox.db-wal", fsync);
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
  assert.equal(pending[1]!.path, "/data/outbox.db-wal");
  pending[1]!.done();
  assert.equal(await settled(second), "resolved");
  assert.equal(await settled(third), "resolved", "one sync for both");
  assert.equal(pending.length, 2);
});

test("file sync: a failed sync fails its own callers; the next caller gets a new attempt", async () => {
  const { pending, fsync } = heldFsync();
  const sync = new FileSync("/data/outbox.db-wal", fsync);
  const first = sync.sync();
  const second = sync.sync();
  pending[0]!.fail(Object.assign(new Error("EIO"), { code: "EIO" }));
  await assert.rejects(first, /EIO/);
  assert.equal(await settled(second), "pending", "the queued caller is not failed by a sync that began before it");
  pending[1]!.done();
  assert.equal(await settled(second), "resolved");
  const third = sync.sync();
  assert.equal(pending.length, 3);
  pending[2]!.fail(new Error("EIO again"));
  await assert.rejects(third);
});

test("outbox: commitDurably resolves only once outbox.db's WAL is synced; the commit is visible before, and stands if the sync fails", async () => {
  const dir = tempDir();
  const { pending, fsync } = heldFsync();
  const outbox = new Outbox(dir, { fsync });
  try {
    const committed = outbox.commitDurably(() => outbox.enqueue("billing", [{ recordId: "a", body: "{}" }]));
    assert.equal(outbox.stats.counts("billing").pending, 1, "committed (a crash of the process keeps it)");
    assert.equal(await settled(committed), "pending", "not on disk until the sync");
    assert.deepEqual(
      pending.map((p) => p.path),
      [join(dir, "outbox.db-wal")],
    );
    pending[0]!.done();
    assert.equal(await committed, 1);

    const unconfirmed = outbox.commitDurably(() => outbox.enqueue("billing", [{ recordId: "b", body: "{}" }]));
    pending[1]!.fail(Object.assign(new Error("no space"), { code: "ENOSPC" }));
    await assert.rejects(
      unconfirmed,
      (err: unknown) => err instanceof EgressError && err.code === "EGRESS_ERR_OUTBOX_SYNC" && /ENOSPC/.test(err.message),
    );
    assert.equal(outbox.stats.counts("billing").pending, 2, "the commit stands: its records are kept, once");
  } finally {
    outbox.close();
  }
  // With the real fsync: the WAL file is there to sync, and what was committed is there after a reopen.
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

test("POST /v1/transactions: answered 202 only after the disk confirms; an unconfirmed commit is a 503, and the batch sent again is kept once", async () => {
  const dir = tempDir();
  const { pending, fsync } = heldFsync();
  const outbox = new Outbox(dir, { fsync });
  const logger = pino({ level: "silent" });
  const space = new DataDirSpace(dir, { logger, reserveBytes: 0, statfs: () => ({ bavail: 2 ** 20, bsize: 4096 }) });
  const limits = { ...defaultHttpLimits, bodyBudgets: { billing: 2 ** 20 } };
  const app = new HttpServer({ logger, bodyLimit: { bytes: 2 ** 20 }, limits });
  registerTransactionsSource(app, outbox, () => {}, space);
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

    const batch = { trace_transactions: traceTransactions(2) };
    answer = post(batch);
    (await nextSync()).fail(Object.assign(new Error("I/O error"), { code: "EIO" }));
    const refused = await answer;
    assert.equal(refused.status, 503);
    const body = (await refused.json()) as { code: string; detail: string };
    assert.equal(body.code, "EGRESS_ERR_OUTBOX_SYNC");
    assert.match(body.detail, /fsync failed: EIO.*send it again/);

    answer = post(batch);
    (await nextSync()).done();
    const retried = await answer;
    assert.equal(retried.status, 202);
    assert.deepEqual(await retried.json(), { accepted: 2, duplicates: 2 });
    assert.equal(outbox.stats.counts("billing").pending, 5, "each record once");
  } finally {
    await app.close();
    outbox.close();
  }
});

test("billing commits: batches that shared an unconfirmed commit all fail, none re-committed alone (which would call its records duplicates)", async () => {
  const dir = tempDir();
  const { pending, fsync, release } = heldFsync();
  const outbox = new Outbox(dir, { fsync });
  try {
    const commits = billingCommits(outbox);
    const batch = (id: string) => [{ recordId: id, body: "{}" }];
    const together = [commits.submit(batch("a")), commits.submit(batch("b"))];
    while (pending.length === 0) await new Promise((resolve) => setImmediate(resolve));
    pending[0]!.fail(Object.assign(new Error("I/O error"), { code: "EIO" }));
    release();
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
