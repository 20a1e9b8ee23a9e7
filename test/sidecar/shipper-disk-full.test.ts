import assert from "node:assert/strict";
import { test } from "node:test";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { tempDir } from "../helpers/processes.ts";
import { billingShipper } from "../helpers/shipper.ts";

/** SQLite's answer to a write on a full disk, as better-sqlite3 throws it. */
const diskFull = () => Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });

/** A real outbox whose next few claims and acks fail as on a full disk (a release is in memory: it cannot fail). */
class FillingOutbox extends Outbox {
  failing = { claim: 2, ack: 2 };

  #fails(write: keyof FillingOutbox["failing"]): boolean {
    return this.failing[write] > 0 && this.failing[write]-- > 0;
  }

  override claim(...args: Parameters<Outbox["claim"]>) {
    if (this.#fails("claim")) throw diskFull();
    return super.claim(...args);
  }

  override ack(stream: Parameters<Outbox["ack"]>[0], seqs: readonly number[]): void {
    if (this.#fails("ack")) throw diskFull();
    super.ack(stream, seqs);
  }
}

test("a full disk under the shipper (claim and ack failing) neither ends its loop nor loses or strands a record", async () => {
  const outbox = new FillingOutbox(tempDir());
  const ids = Array.from({ length: 10 }, (_, i) => `tx-${i}`);
  outbox.enqueue(
    "billing",
    ids.map((id) => ({ recordId: id, body: JSON.stringify({ id }) })),
  );
  // Unit test: a stand-in beacon that takes every batch (it dedups by id, so a re-send after a lost ack is harmless).
  const received: string[] = [];
  const { shipper, health } = billingShipper(outbox, async (_path, body: { trace_transactions: { id: string }[] }) => {
    received.push(...body.trace_transactions.map((t) => t.id));
    return { status: 200, body: { inserted_count: body.trace_transactions.length } };
  });
  shipper.start();
  try {
    const deadline = Date.now() + 5_000;
    while (outbox.stats.counts("billing").completed < ids.length && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 5));
  } finally {
    await shipper.stop(100);
  }
  const counts = outbox.stats.counts("billing");
  assert.deepEqual([counts.pending, counts.sending, counts.completed, counts.failed], [0, 0, 10, 0], "every record delivered and acked");
  assert.deepEqual(outbox.failing, { claim: 0, ack: 0 }, "every failure was met (the loop carried on past each)");
  assert.deepEqual(new Set(received), new Set(ids), "the beacon got every record");
  assert.match(health.lastError?.message ?? "", /data dir full/, "the full disk shows in the stream's status");
  outbox.close();
});
