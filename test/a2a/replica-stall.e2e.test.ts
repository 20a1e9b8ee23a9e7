import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { a2aResult, userMessage } from "../helpers/a2a-rpc.ts";
import { freshDatabase, query } from "../helpers/postgres.ts";
import { startService, startTogether, tempDir, waitFor } from "../helpers/processes.ts";

// Fencing between real `a2a serve` replicas on the real PostgreSQL: a graph blocks its replica's event loop for
// longer than --replica-timeout; the other replica fails its task and runs the conversation's next turn; the
// stalled replica, when it wakes, changes nothing.

const GRAPHS = new URL("../fixtures/graphs/stall-graph.json", import.meta.url).pathname;
let databaseUrl: string;
let dropDatabase: () => Promise<void>;

before(async () => {
  const database = await freshDatabase("egress_stall");
  databaseUrl = database.url;
  dropDatabase = database.drop;
});
after(() => dropDatabase?.());

const serve = () =>
  startService(
    ["a2a", "serve", "--config", GRAPHS, "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-stall-"), "--replica-timeout", "1s"],
    "agent server listening",
    { DATABASE_URI: databaseUrl },
  );

test("a replica whose graph blocks its event loop past --replica-timeout: its task ends failed, the next turn's completed, its late result is dropped", async () => {
  const [a, b] = await startTogether([serve(), serve()]);
  try {
    const stalled = await a2aResult(a.url, "stall", "message/send", { ...userMessage("block 5000"), configuration: { blocking: false } });
    const { contextId } = stalled;
    const failed = await waitFor(
      async () => ((await a2aResult(b.url, "stall", "tasks/get", { id: stalled.id })).status.state === "failed" ? true : undefined),
      10_000,
      "the other replica to fail the stalled replica's task",
    );
    assert.ok(failed);
    const next = await a2aResult(b.url, "stall", "message/send", userMessage("next", { contextId }));
    assert.equal(next.status.state, "completed", "the conversation goes on, on the live replica, while the other is stalled");

    // A wakes (its graph ends after 5 s) and finds its task taken over: its result goes nowhere.
    await waitFor(() => /another replica took its task over/.test(a.output()) || undefined, 15_000, "the stalled replica to wake");
    const rows = await query<{ id: string; state: string; epoch: number }>(
      databaseUrl,
      "SELECT id, state, epoch FROM a2a_tasks WHERE context_id = $1 ORDER BY created_at",
      [contextId],
    );
    assert.deepEqual(
      rows.map((row) => [row.id, row.state, row.epoch]),
      [
        [stalled.id, "failed", 2],
        [next.id, "completed", 1],
      ],
    );
    for (const replica of [a, b]) {
      assert.equal((await a2aResult(replica.url, "stall", "tasks/get", { id: stalled.id })).status.state, "failed");
      assert.equal((await a2aResult(replica.url, "stall", "tasks/get", { id: next.id })).status.state, "completed");
    }
    const stale = a
      .output()
      .split("\n")
      .filter((line) => line.includes("another replica took its task over"));
    assert.ok(
      stale.every((line) => line.includes(stalled.id) && !line.includes("blocked 5000")),
      stale.join("\n"),
    );

    // The conversation is the live replica's: its next turn sees "next", and no trace of the stale run's answer.
    const third = await a2aResult(a.url, "stall", "message/send", userMessage("and now?", { contextId }));
    assert.equal(third.artifacts[0].parts[0].text, "you said: block 5000, next, and now?");
  } finally {
    await a.stop();
    await b.stop();
  }
});
