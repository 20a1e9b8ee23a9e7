import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import type { Logger } from "pino";
import { DatabaseUnavailableError } from "../src/database-unavailable.ts";
import { WriterThread } from "../src/writer-thread.ts";
import { tempDir } from "./helpers/processes.ts";

const SCRIPT = new URL("./helpers/crashing-writer-thread.ts", import.meta.url);

/** A writer on the crashing test thread; `started()` and `ended()`: how many threads have so far. */
function writer(options: { now?: () => number; idleMs?: number } = {}) {
  const logged: string[] = [];
  const logger = { error: (_: unknown, msg: string) => logged.push(msg), info: () => {} } as unknown as Logger;
  const starts = join(tempDir("writer-thread-"), "starts");
  writeFileSync(starts, "");
  const thread = new WriterThread<{ n: number; crash?: boolean }>(SCRIPT, {
    name: "the test writer",
    workerData: { starts },
    logger,
    ...options,
  });
  const count = (line: string) =>
    readFileSync(starts, "utf8")
      .split("\n")
      .filter((l) => l === line).length;
  return { thread, logged, started: () => count("started"), ended: () => count("ended") };
}

test("writer thread: one lost with requests waiting fails them (503), later ones are answered by the next thread after the wait", async () => {
  let now = 0;
  const { thread, logged, started } = writer({ now: () => now });
  assert.deepEqual(await thread.send({ n: 1 }), [1]);
  // Sent together: the crash takes its thread, and the request queued behind it on that thread fails with it.
  const [crashed, behind] = await Promise.allSettled([thread.send({ n: 2, crash: true }), thread.send({ n: 3 })]);
  assert.ok(crashed.status === "rejected" && crashed.reason instanceof DatabaseUnavailableError);
  assert.ok(behind.status === "rejected" && behind.reason instanceof DatabaseUnavailableError, "never left unsettled");
  await assert.rejects(thread.send({ n: 4 }), DatabaseUnavailableError, "within the wait: refused");
  assert.equal(started(), 1, "no thread started within the wait");
  now += 1_000;
  assert.deepEqual(await thread.send({ n: 5 }), [5]);
  assert.equal(started(), 2);
  assert.deepEqual(logged, ["the test writer thread stopped; its writes are refused (503) until another starts"]);
  await thread.close();
});

test("writer thread: a request that kills every thread it meets, sent every 5 s, starts about 120 threads a simulated hour (0.5 s doubling to 30 s), not one a request", async () => {
  let now = 0;
  const { thread, logged, started } = writer({ now: () => now });
  let requests = 0;
  // A quarter of an hour (each thread takes a while to start): 180 requests.
  for (; now < 900_000; now += 5_000) {
    requests++;
    await assert.rejects(thread.send({ n: 0, crash: true }), DatabaseUnavailableError);
  }
  // The thread opens each time, but the wait grows until one commits: at most one start in 30 s once it has grown.
  assert.ok(started() <= 40 && started() > 20, `${started()} threads for ${requests} requests in 15 minutes`);
  assert.equal(logged.length, 1, "logged once for the outage");
  now += 60_000;
  assert.deepEqual(await thread.send({ n: 7 }), [7], "a good request after the wait is answered");
  await thread.close();
});

test("writer thread: a request while the idle thread is ending goes to a new one; close waits for both to end", async () => {
  const { thread, started, ended } = writer({ idleMs: 20 });
  assert.deepEqual(await thread.send({ n: 1 }), [1]);
  for (let waited = 0; thread.running && waited < 5_000; waited += 5) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(thread.running, false, "told to end once idle");
  assert.deepEqual(await thread.send({ n: 2 }), [2]);
  assert.equal(thread.running, true);
  await thread.close();
  assert.equal(thread.running, false);
  assert.equal(started(), 2);
  assert.equal(ended(), 2, "close returned only once both threads had ended");
  await assert.rejects(thread.send({ n: 3 }), DatabaseUnavailableError, "closed: refused");
});
