import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import pino from "pino";
import { ReplicaWatch } from "../../src/a2a/replica-watch.ts";
import type { TaskStore } from "../../src/a2a/task-store.ts";
import { MINUTE, SimulatedTime } from "../helpers/simulated-time.ts";

// A replica cut off from the database with the others: when it is back, their silence meant nothing.

let time: SimulatedTime;
beforeEach(() => (time = SimulatedTime.start()));
afterEach(() => time.stop());

test("after a database outage longer than the replica timeout, a replica fails no other replica's tasks until they had a full timeout to announce themselves", async () => {
  let down = false;
  const sweeps: number[] = [];
  const store = {
    heartbeat: async () => {
      if (down) throw Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" });
    },
    failUnfinished: async () => {
      sweeps.push(time.now());
      return 0;
    },
  } as unknown as TaskStore;
  const runs = { leases: () => [], lost: () => {} };
  const watch = new ReplicaWatch({
    store,
    runs,
    timeoutMs: 30_000,
    failed: (task) => task,
    logger: pino({ level: "silent" }),
    now: time.now,
  });
  await watch.start();
  await time.advance(MINUTE, 1_000);
  assert.equal(sweeps.length, 7, "a sweep at start and every 10 s");

  // A short outage (under the timeout) changes nothing once it ends.
  down = true;
  await time.advance(15_000, 1_000);
  down = false;
  sweeps.length = 0;
  await time.advance(10_000, 1_000);
  assert.equal(sweeps.length, 1);

  // Two minutes away: back, it waits a full timeout before it sweeps again.
  down = true;
  await time.advance(2 * MINUTE, 1_000);
  down = false;
  const back = time.now();
  sweeps.length = 0;
  await time.advance(MINUTE, 1_000);
  assert.ok(sweeps.length > 0, "it sweeps again");
  assert.ok(sweeps[0]! - back >= 30_000, `first sweep ${sweeps[0]! - back} ms after the database came back`);
  await watch.stop();
});
