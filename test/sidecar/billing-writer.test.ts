import assert from "node:assert/strict";
import { test } from "node:test";
import Database from "better-sqlite3";
import pino from "pino";
import { DatabaseUnavailableError } from "../../src/database-unavailable.ts";
import { BillingWriter } from "../../src/sidecar/storage/billing-writer.ts";
import { DataDirSpace } from "../../src/sidecar/storage/disk-space.ts";
import { bodyText, Outbox, outboxPath } from "../../src/sidecar/storage/outbox.ts";
import type { RecordColumns } from "../../src/sidecar/storage/outbox-insert.ts";
import { tempDir } from "../helpers/processes.ts";
import { postToTransactionsRoute } from "../helpers/transactions-route.ts";

/** A batch of `n` billing records as the intake hands them over (ids unique unless given). */
function batch(n: number, ids: string[] = Array.from({ length: n }, () => crypto.randomUUID())): RecordColumns {
  return { recordIds: ids, bodies: ids.map((id) => JSON.stringify({ id })), attempts: ids.map((_, i) => i % 3) };
}

test("billing writer: batches sent together are each answered with their own new records, on disk and in the sidecar's queue when answered", async () => {
  const dir = tempDir("billing-writer-");
  const outbox = new Outbox(dir, { now: () => 1_000 });
  const writer = new BillingWriter(dir, { now: () => 2_000 });
  try {
    const batches = Array.from({ length: 20 }, () => batch(120));
    assert.deepEqual(
      await Promise.all(batches.map((b) => writer.enqueue(b))),
      batches.map(() => 120),
    );
    // Read on the sidecar's own connection: what the shipper claims next.
    assert.equal(outbox.stats.counts("billing").pending, 2400);
    const claimed = outbox.claim("billing", 3);
    assert.deepEqual(
      claimed.map((r) => [r.recordId, bodyText(r), r.attempts]),
      [0, 1, 2].map((i) => [batches[0]!.recordIds![i], batches[0]!.bodies[i], i % 3]),
      "in the order sent, with the instance's failed-send counts",
    );
    const db = new Database(outboxPath(dir), { readonly: true });
    assert.deepEqual(db.prepare("SELECT DISTINCT enqueued_at AS at FROM outbox").all(), [{ at: 2_000 }], "the sidecar's clock");
    db.close();
    assert.equal(await writer.enqueue(batches[7]!), 0, "a batch sent again stores nothing");
    const mixed = batch(3, [batches[2]!.recordIds![5]!, "new-a", "new-a"]);
    assert.equal(await writer.enqueue(mixed), 1, "an id held, or repeated within the batch, is stored once");
    assert.equal(outbox.stats.counts("billing").pending + outbox.stats.counts("billing").sending, 2401);
  } finally {
    await writer.close();
    outbox.close();
  }
});

test("billing writer: close waits for the commits under way, and the sidecar's own writes wait for the thread's, never fail", async () => {
  const dir = tempDir("billing-writer-");
  const outbox = new Outbox(dir);
  const writer = new BillingWriter(dir);
  let answered = 0;
  const pending = Array.from({ length: 60 }, () => writer.enqueue(batch(500)).finally(() => answered++));
  // Meanwhile the shipper's bookkeeping on the sidecar's connection: each write waits for the lock, none is refused.
  let acked = 0;
  for (let turn = 0; turn < 10; turn++) {
    const claimed = outbox.claim("billing", 100);
    outbox.ack(
      "billing",
      claimed.map((r) => r.seq),
    );
    acked += claimed.length;
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.ok(answered < 60, "commits were still under way when close was called");
  await writer.close();
  assert.deepEqual(
    await Promise.all(pending),
    pending.map(() => 500),
  );
  const counts = outbox.stats.counts("billing");
  assert.equal(counts.pending + counts.completed, 30_000);
  assert.equal(counts.completed, acked);
  await assert.rejects(writer.enqueue(batch(1)), DatabaseUnavailableError, "closed: refused, no new thread");
  outbox.close();
});

test("billing writer: its thread ends when idle (memory back) and the next batch starts another", async () => {
  const dir = tempDir("billing-writer-");
  const outbox = new Outbox(dir);
  const writer = new BillingWriter(dir, { idleMs: 50 });
  try {
    assert.equal(writer.running, false, "none before the first batch: an idle sidecar holds no second heap");
    assert.equal(await writer.enqueue(batch(10)), 10);
    assert.equal(writer.running, true);
    for (let waited = 0; writer.running && waited < 5_000; waited += 25) await new Promise((resolve) => setTimeout(resolve, 25));
    assert.equal(writer.running, false, "ended after 50 ms without a batch");
    assert.equal(await writer.enqueue(batch(10)), 10);
    assert.equal(outbox.stats.counts("billing").pending, 20);
  } finally {
    await writer.close();
    outbox.close();
  }
});

test("POST /v1/transactions: with no outbox its writer can open, a batch is a 503 to send again (not a 500), and nothing is stored", async () => {
  const dir = tempDir("billing-writer-"); // no outbox.db in it
  const writer = new BillingWriter(dir);
  try {
    const answer = await postToTransactionsRoute(writer, new DataDirSpace(dir, { logger: pino({ level: "silent" }) }));
    assert.equal(answer.status, 503);
    assert.equal(answer.body.code, "EGRESS_ERR_DATABASE_UNAVAILABLE");
    assert.ok(answer.retryAfter, "says when to send it again");
    assert.equal(answer.woken, 0, "nothing enqueued, no shipper woken");
  } finally {
    await writer.close();
  }
});
