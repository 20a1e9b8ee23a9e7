import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { TaskStore } from "../../src/a2a/task-store.ts";
import type { Task } from "../../src/protocol/a2a.ts";
import { tempDir } from "../helpers/processes.ts";

// Run counts behind the agent server's trace transactions: each run counted once, each interval reported under
// one id until the sidecar has it, across reopening the file.

const MINUTE = 60_000;
const task = (id: string, state: Task["status"]["state"]): Task => ({
  kind: "task",
  id,
  contextId: "c1",
  status: { state, timestamp: "2026-11-23T00:00:00.000Z" },
});

test("runs count per session and interval; a closed interval keeps its transaction id until reported", () => {
  const path = join(tempDir("tasks-"), "tasks.db");
  let store = new TaskStore(path, MINUTE);
  const t0 = 10 * MINUTE;
  store.create("notes", task("t1", "submitted"), t0);
  store.finish(task("t1", "completed"), "s1", t0 + 1_000);
  store.finish(task("t1", "completed"), "s1", t0 + 2_000);
  store.finish(task("t1", "completed"), "s2", t0 + 3_000);
  assert.deepEqual(store.closedCounts(t0 + 30_000), [], "the running interval is not reported yet");

  const closed = store.closedCounts(t0 + MINUTE);
  assert.deepEqual(closed.map((c) => [c.sessionId, c.runs, c.intervalStart, c.intervalEnd, c.firstAt, c.lastAt]).sort(), [
    ["s1", 2, t0, t0 + MINUTE, t0 + 1_000, t0 + 2_000],
    ["s2", 1, t0, t0 + MINUTE, t0 + 3_000, t0 + 3_000],
  ]);
  // A run ending now counts toward the next interval, never into a closed one.
  store.finish(task("t1", "completed"), "s1", t0 + MINUTE + 5);
  store.close();

  store = new TaskStore(path, MINUTE);
  const again = store.closedCounts(t0 + MINUTE + 10);
  assert.deepEqual(again.map((c) => c.transactionId).sort(), closed.map((c) => c.transactionId).sort(), "a resend carries the same ids");
  store.reported(closed.map((c) => c.transactionId));
  const stopping = store.closedCounts(t0 + MINUTE + 10, true);
  assert.deepEqual(
    stopping.map((c) => [c.sessionId, c.runs]),
    [["s1", 1]],
    "a stopping server closes the running interval",
  );
  store.close();
});

test("tasks left running by a stop end failed when the store is opened again", () => {
  const store = new TaskStore(join(tempDir("tasks-"), "tasks.db"), MINUTE);
  store.create("notes", task("a", "working"), 0);
  store.create("notes", { ...task("b", "completed"), contextId: "c2" }, 0);
  assert.equal(
    store.failUnfinished((t) => ({ ...t, status: { ...t.status, state: "failed" } }), 1),
    1,
  );
  assert.equal(store.get("a")!.task.status.state, "failed");
  assert.equal(store.get("b")!.task.status.state, "completed");
  assert.deepEqual(store.context("c1"), { graphId: "notes", waitingTaskId: undefined });
  store.close();
});

test("a context names its task waiting for input, and none once that task has moved on", () => {
  const store = new TaskStore(join(tempDir("tasks-"), "tasks.db"), MINUTE);
  store.create("approval", { ...task("q", "input-required"), contextId: "c9" }, 0);
  assert.deepEqual(store.context("c9"), { graphId: "approval", waitingTaskId: "q" });
  store.update({ ...task("q", "canceled"), contextId: "c9" }, 1);
  assert.deepEqual(store.context("c9"), { graphId: "approval", waitingTaskId: undefined });
  assert.equal(store.context("nope"), undefined);
  store.close();
});
