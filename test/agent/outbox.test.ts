import assert from "node:assert/strict";
import { test } from "node:test";
import { Outbox } from "../../src/agent/outbox.ts";
import { tempDir } from "../helpers/processes.ts";

test("outbox: claims oldest first, keeps ids once, counts failed attempts, dead-letters, and prunes only old completed rows", () => {
  let now = 1_000;
  const dir = tempDir();
  const outbox = new Outbox(dir, { now: () => now });
  const records = Array.from({ length: 5 }, (_, i) => ({ recordId: `id-${i}`, body: `{"n":${i}}` }));
  assert.equal(outbox.enqueue("billing", records), 5);
  assert.equal(outbox.enqueue("billing", records.slice(0, 2)), 0, "ids already held are skipped");

  const first = outbox.claim("billing", 3);
  assert.deepEqual(first.map((r) => r.recordId), ["id-0", "id-1", "id-2"]);
  outbox.fail([first[0]!.seq], "503");
  outbox.deadLetter([first[1]!.seq], "422 bad tenant");
  outbox.ack([first[2]!.seq]);
  const again = outbox.claim("billing", 10);
  assert.deepEqual(again.map((r) => [r.recordId, r.attempts]), [["id-0", 1], ["id-3", 0], ["id-4", 0]]);
  assert.deepEqual(outbox.deadLetters("billing"), [{ recordId: "id-1", error: "422 bad tenant", attempts: 0 }]);
  outbox.close();

  // A crash leaves records in 'sending': reopening hands them back as pending, nothing lost.
  now = 10_000;
  const reopened = new Outbox(dir, { now: () => now });
  const counts = reopened.counts("billing");
  assert.deepEqual([counts.pending, counts.sending, counts.completed, counts.failed], [3, 0, 1, 1]);
  assert.equal(reopened.pruneCompleted(500), 0, "completed after the cut-off: kept");
  assert.equal(reopened.pruneCompleted(now), 1);
  assert.equal(reopened.counts("billing").failed, 1, "dead letters are never pruned");
  reopened.close();
});
