import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import pg from "pg";
import { SqliteTaskStore, type TaskStore } from "../../src/a2a/task-store.ts";
import { PostgresTaskStore } from "../../src/a2a/task-store-postgres.ts";
import type { Task } from "../../src/protocol/a2a.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { tempDir } from "../helpers/processes.ts";

// The agent server's task store on both engines, one suite: run counts behind its trace transactions (each run
// counted once, each interval reported under one id until the sidecar has it, across reopening), tasks, contexts.

const MINUTE = 60_000;
const task = (id: string, state: Task["status"]["state"]): Task => ({
  kind: "task",
  id,
  contextId: "c1",
  status: { state, timestamp: "2026-11-23T00:00:00.000Z" },
});

/** One run from its start to its end: a task of its own (in a context of its own), finished and counted. */
async function run(store: TaskStore, id: string, sessionId: string, at: number): Promise<void> {
  const lease = await store.create("notes", { ...task(id, "submitted"), contextId: `context-${id}` }, at);
  assert.equal(await store.finish({ ...task(id, "completed"), contextId: `context-${id}` }, lease, sessionId, at), true);
}

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A new location and a way to open a store on it (again, as after a restart; or beside, as another replica). */
const engines: { name: string; location(): Promise<() => Promise<TaskStore>> }[] = [
  {
    name: "sqlite",
    location: async () => {
      const path = join(tempDir("tasks-"), "tasks.db");
      return async () => new SqliteTaskStore(path, MINUTE);
    },
  },
  {
    name: "postgresql",
    location: async () => {
      const database = await freshDatabase("egress_tasks");
      cleanups.push(database.drop);
      return async () => {
        const pool = new pg.Pool({ connectionString: database.url, max: 2 });
        pool.on("error", () => {}); // the database is dropped at the end, its idle connections with it
        cleanups.push(() => pool.end());
        return PostgresTaskStore.open(pool, MINUTE);
      };
    },
  },
];

for (const engine of engines) {
  describe(`task store on ${engine.name}`, () => {
    test("runs count per session and interval; a closed interval keeps its transaction id until reported", async () => {
      const open = await engine.location();
      let store = await open();
      const t0 = 10 * MINUTE;
      await run(store, "t1", "s1", t0 + 1_000);
      await run(store, "t2", "s1", t0 + 2_000);
      await run(store, "t3", "s2", t0 + 3_000);
      assert.deepEqual(await store.closedCounts(t0 + 30_000), [], "the running interval is not reported yet");

      const closed = await store.closedCounts(t0 + MINUTE);
      assert.deepEqual(closed.map((c) => [c.sessionId, c.runs, c.intervalStart, c.intervalEnd, c.firstAt, c.lastAt]).sort(), [
        ["s1", 2, t0, t0 + MINUTE, t0 + 1_000, t0 + 2_000],
        ["s2", 1, t0, t0 + MINUTE, t0 + 3_000, t0 + 3_000],
      ]);
      // A run ending now counts toward the next interval, never into a closed one.
      await run(store, "t4", "s1", t0 + MINUTE + 5);
      await store.close();

      store = await open();
      const again = await store.closedCounts(t0 + MINUTE + 10);
      assert.deepEqual(
        again.map((c) => c.transactionId).sort(),
        closed.map((c) => c.transactionId).sort(),
        "a resend carries the same ids",
      );
      await store.reported(closed.map((c) => c.transactionId));
      const stopping = await store.closedCounts(t0 + MINUTE + 10, true);
      assert.deepEqual(
        stopping.map((c) => [c.sessionId, c.runs]),
        [["s1", 1]],
        "a stopping server closes the running interval",
      );
      await store.close();
    });

    test("tasks left running by a stop end failed when the store is opened again", async () => {
      const store = await (await engine.location())();
      await store.create("notes", task("a", "working"), 0);
      await store.create("notes", { ...task("b", "completed"), contextId: "c2" }, 0);
      assert.equal(await store.failUnfinished((t) => ({ ...t, status: { ...t.status, state: "failed" } }), 1), 1);
      assert.equal((await store.get("a"))!.task.status.state, "failed");
      assert.equal((await store.get("b"))!.task.status.state, "completed");
      assert.deepEqual(await store.context("c1"), { graphId: "notes", waitingTaskId: undefined });
      await store.close();
    });

    test("a context names its task waiting for input, and none once that task has moved on", async () => {
      const store = await (await engine.location())();
      await store.create("approval", { ...task("q", "input-required"), contextId: "c9" }, 0);
      assert.deepEqual(await store.context("c9"), { graphId: "approval", waitingTaskId: "q" });
      const waiting = (await store.get("q"))!;
      assert.ok(await store.take({ ...task("q", "canceled"), contextId: "c9" }, waiting.epoch, 1));
      assert.equal(await store.take({ ...task("q", "submitted"), contextId: "c9" }, waiting.epoch, 2), undefined, "taken once only");
      assert.deepEqual(await store.context("c9"), { graphId: "approval", waitingTaskId: undefined });
      assert.equal(await store.context("nope"), undefined);
      assert.equal(await store.get("nope"), undefined);
      await store.close();
    });

    test("two stores on one location (two replicas) count runs into one row per session and interval", async () => {
      const open = await engine.location();
      const [one, two] = [await open(), await open()];
      const t0 = 20 * MINUTE;
      await Promise.all(Array.from({ length: 10 }, (_, i) => run(i % 2 === 0 ? one : two, `r${i}`, "s", t0 + i)));
      const counts = await two.closedCounts(t0 + MINUTE);
      assert.deepEqual(
        counts.map((c) => [c.sessionId, c.runs]),
        [["s", 10]],
      );
      assert.deepEqual(
        (await one.closedCounts(t0 + MINUTE)).map((c) => c.transactionId),
        counts.map((c) => c.transactionId),
      );
      await one.close();
      await two.close();
    });
  });
}
