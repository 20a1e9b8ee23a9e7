import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import pg from "pg";
import Database from "better-sqlite3";
import { ContextBusyError, type TaskStore } from "../../src/a2a/task-store.ts";
import { SqliteTaskStore } from "../../src/a2a/task-store-sqlite.ts";
import { PostgresTaskStore } from "../../src/a2a/task-store-postgres.ts";
import type { Task } from "../../src/protocol/a2a.ts";
import { freshDatabase, query } from "../helpers/postgres.ts";
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

    test("a task taken over from a silent owner gets a new epoch; its old lease writes nothing, and its context one run at a time", async () => {
      const open = await engine.location();
      const [a, b] = [await open(), await open()];
      const fail = (t: Task): Task => ({ ...t, status: { ...t.status, state: "failed" } });
      const stale = await a.create("notes", task("f1", "submitted"), 0);
      await assert.rejects(b.create("notes", task("f2", "submitted"), 1), ContextBusyError, "one run per context");
      await a.heartbeat(0);
      assert.equal(await b.failUnfinished(fail, 20_000), 0, "a live owner's task is left alone");
      assert.equal(await b.failUnfinished(fail, 40_000), 1, "silent for more than 30 s: taken over");
      assert.equal((await b.get("f1"))!.epoch, 2);
      assert.deepEqual(await a.lost([stale]), [stale]);
      assert.equal(await a.finish(task("f1", "completed"), stale, "s", 41_000), false, "the stale end is refused");
      assert.equal((await b.get("f1"))!.task.status.state, "failed");

      const next = await b.create("notes", task("f2", "submitted"), 42_000);
      assert.deepEqual(await b.lost([next]), []);
      assert.equal(await b.finish(task("f2", "completed"), next, "s", 43_000), true);
      const counts = await b.closedCounts(43_000, true);
      assert.deepEqual(
        counts.map((c) => [c.sessionId, c.runs]),
        [["s", 1]],
        "the stale run is not counted",
      );
      await a.close();
      await b.close();
    });

    test("an assistant's tasks list newest first, a page at a time, filtered by context and state; a context's tasks in order", async () => {
      const store = await (await engine.location())();
      const inContext = (id: string, contextId: string): Task => ({ ...task(id, "submitted"), contextId });
      // c1: a, b (completed), then e (running); c2: c, d (completed); another assistant's x.
      for (const [id, contextId, at] of [
        ["a", "c1", 1],
        ["b", "c1", 2],
        ["c", "c2", 3],
        ["d", "c2", 3],
      ] as const) {
        const lease = await store.create("notes", inContext(id, contextId), at);
        await store.finish({ ...inContext(id, contextId), status: { ...task(id, "completed").status } }, lease, "s", at);
      }
      await store.create("notes", inContext("e", "c1"), 5);
      await store.create("other", inContext("x", "cx"), 6);

      const ids = (page: { tasks: { task: Task }[] }) => page.tasks.map((t) => t.task.id);
      const first = await store.list({ graphId: "notes", limit: 2 });
      assert.deepEqual([ids(first), first.total], [["e", "d"], 5], "newest first; ties by id, descending");
      const last = first.tasks.at(-1)!;
      const second = await store.list({ graphId: "notes", limit: 2, after: { createdAt: last.createdAt, id: last.task.id } });
      assert.deepEqual([ids(second), second.total], [["c", "b"], 5]);
      const third = await store.list({ graphId: "notes", limit: 2, after: { createdAt: 2, id: "b" } });
      assert.deepEqual(ids(third), ["a"]);
      assert.deepEqual(ids(await store.list({ graphId: "notes", contextId: "c2", limit: 10 })), ["d", "c"]);
      const running = await store.list({ graphId: "notes", states: ["submitted", "working"], limit: 10 });
      assert.deepEqual([ids(running), running.total], [["e"], 1]);
      assert.deepEqual(ids(await store.list({ graphId: "nobody", limit: 10 })), []);

      assert.deepEqual(
        (await store.contextTasks("c1")).map((t) => t.id),
        ["a", "b", "e"],
      );
      await store.close();
    });
  });
}

/** tasks.db and the a2a_ tables as the version before leases made them, with a task its last stop left running. */
const legacy: { name: string; open(): Promise<TaskStore> }[] = [
  {
    name: "sqlite",
    open: async () => {
      const path = join(tempDir("tasks-legacy-"), "tasks.db");
      const db = new Database(path);
      db.exec(`
        CREATE TABLE contexts (id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, created_at INTEGER NOT NULL) STRICT;
        CREATE TABLE tasks (
          id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, context_id TEXT NOT NULL REFERENCES contexts(id),
          state TEXT NOT NULL, task TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
        ) STRICT;
        INSERT INTO contexts VALUES ('c1', 'notes', 0);
        INSERT INTO tasks VALUES ('old', 'notes', 'c1', 'submitted', '${JSON.stringify(task("old", "submitted"))}', 0, 0);`);
      db.close();
      return new SqliteTaskStore(path, MINUTE);
    },
  },
  {
    name: "postgresql",
    open: async () => {
      const database = await freshDatabase("egress_tasks_legacy");
      cleanups.push(database.drop);
      await query(
        database.url,
        `CREATE TABLE a2a_contexts (id text PRIMARY KEY, graph_id text NOT NULL, created_at bigint NOT NULL);
         CREATE TABLE a2a_tasks (
           id text PRIMARY KEY, graph_id text NOT NULL, context_id text NOT NULL REFERENCES a2a_contexts(id),
           state text NOT NULL, task text NOT NULL, created_at bigint NOT NULL, updated_at bigint NOT NULL, owner text
         );
         CREATE UNIQUE INDEX a2a_one_run_per_context ON a2a_tasks (context_id) WHERE state IN ('submitted', 'working');
         INSERT INTO a2a_contexts VALUES ('c1', 'notes', 0);
         INSERT INTO a2a_tasks VALUES ('old', 'notes', 'c1', 'submitted', '${JSON.stringify(task("old", "submitted"))}', 0, 0, 'gone');`,
      );
      const pool = new pg.Pool({ connectionString: database.url, max: 2 });
      pool.on("error", () => {});
      cleanups.push(() => pool.end());
      return PostgresTaskStore.open(pool, MINUTE);
    },
  },
];

for (const engine of legacy) {
  test(`task store on ${engine.name}: a database of the version before leases gets them at start, its tasks kept`, async () => {
    const store = await engine.open();
    const old = (await store.get("old"))!;
    assert.deepEqual([old.task.status.state, old.epoch], ["submitted", 0]);
    await assert.rejects(store.create("notes", task("new", "submitted"), 1), ContextBusyError, "one run per context, from the start");
    assert.equal(await store.failUnfinished((t) => ({ ...t, status: { ...t.status, state: "failed" } }), 2), 1);
    assert.equal((await store.get("old"))!.epoch, 1, "taken over under a new epoch");
    const lease = await store.create("notes", task("new", "submitted"), 3);
    assert.equal(await store.finish(task("new", "completed"), lease, "s", 4), true);
    await store.close();
  });
}
