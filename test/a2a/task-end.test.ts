import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import pino from "pino";
import { storeTaskEnd } from "../../src/a2a/task-end.ts";
import type { Lease, TaskStore } from "../../src/a2a/task-store.ts";
import type { Task } from "../../src/protocol/a2a.ts";
import { MINUTE, SimulatedTime } from "../helpers/simulated-time.ts";

// A run ends while the database is away: its end (and its billing count) is stored once it is back, once.

let time: SimulatedTime;
beforeEach(() => (time = SimulatedTime.start()));
afterEach(() => time.stop());

const silent = pino({ level: "silent" });
const ended: Task = { kind: "task", id: "t", contextId: "c", status: { state: "completed", timestamp: "2026-11-01T00:00:00.000Z" } };
const lease: Lease = { taskId: "t", contextId: "c", owner: "r", epoch: 1 };
const away = () => Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" });

/** A task store whose finish fails while `down`; `commitsAnyway`: a failure after the commit went through (its answer lost). */
function store(state: { down: boolean; commitsAnyway?: boolean }) {
  const calls = { finish: 0, counted: 0, tries: 0 };
  let row: Task = { ...ended, status: { state: "submitted", timestamp: "" } };
  const taskStore = {
    finish: async (task: Task) => {
      calls.tries++;
      calls.finish++;
      if (state.down && !state.commitsAnyway) throw away();
      row = task;
      calls.counted++;
      if (state.down) throw away();
      return true;
    },
    get: async () => {
      calls.tries++;
      if (state.down) throw away();
      return { graphId: "g", task: row };
    },
  } as unknown as TaskStore;
  return { taskStore, calls };
}

test("a run's end waits for the database with backoff, then is stored and counted once", async () => {
  const state = { down: true };
  const { taskStore, calls } = store(state);
  const done = storeTaskEnd(taskStore, ended, lease, "s", { now: time.now, logger: silent });
  await time.advance(5 * MINUTE, 1_000);
  // 0.5 s doubling to 30 s: about 16 tries in the first 5 minutes, not a loop.
  assert.ok(calls.tries >= 10 && calls.tries <= 20, `${calls.tries} tries in 5 minutes`);
  state.down = false;
  await time.advance(MINUTE, 1_000);
  await done;
  assert.equal(calls.counted, 1);
});

test("a run's end whose commit went through though its answer was lost is not stored again: counted once", async () => {
  const state = { down: true, commitsAnyway: true };
  const { taskStore, calls } = store(state);
  const done = storeTaskEnd(taskStore, ended, lease, "s", { now: time.now, logger: silent });
  await time.settle();
  state.down = false;
  await time.advance(MINUTE, 1_000);
  await done;
  assert.deepEqual([calls.finish, calls.counted], [1, 1]);
});

test("a run's end the database stays away for gives up after 10 minutes, with the error; a bad statement at once", async () => {
  const { taskStore } = store({ down: true });
  const outcome = storeTaskEnd(taskStore, ended, lease, "s", { now: time.now, logger: silent }).catch((err: Error) => err);
  await time.advance(12 * MINUTE, 1_000);
  assert.match(((await outcome) as Error).message, /administrator command/);
  const bad = { finish: async () => Promise.reject(Object.assign(new Error("value too long"), { code: "22001" })) } as unknown as TaskStore;
  await assert.rejects(storeTaskEnd(bad, ended, lease, "s", { now: time.now, logger: silent }), /value too long/);
});
