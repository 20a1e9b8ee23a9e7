import assert from "node:assert/strict";
import { test } from "node:test";
import { Outbox } from "../../src/agent/outbox.ts";
import { tempDir } from "../helpers/processes.ts";
import { billingShipper } from "../helpers/shipper.ts";

test("a record the shipper cannot even encode does not stop the stream: it stays pending, the error shows, stop still works", async () => {
  const outbox = new Outbox(tempDir());
  outbox.enqueue("billing", [{ recordId: "corrupt", body: "{not json" }]);
  // Unit test: a stand-in client that must never be reached with an unencodable batch.
  let posts = 0;
  const { shipper, health } = billingShipper(outbox, async () => (posts++, { status: 200, body: { inserted_count: 0 } }), { maxBackoffMs: 20 });
  shipper.start();
  const deadline = Date.now() + 2000;
  while (health.lastError === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.match(health.lastError?.message ?? "", /JSON/);
  await new Promise((resolve) => setTimeout(resolve, 60)); // a few more rounds: the loop is still alive
  await shipper.stop(100);
  assert.equal(posts, 0);
  const counts = outbox.counts("billing");
  assert.deepEqual([counts.pending, counts.sending, counts.completed, counts.failed], [1, 0, 0, 0], "kept, not lost or marked sent");
  outbox.close();
});
