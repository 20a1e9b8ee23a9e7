import assert from "node:assert/strict";
import { mock, test } from "node:test";
import { settleHeapSoon } from "../../src/sidecar/settle-heap.ts";

const HOUR = 3_600_000;

test("settling the heap: one memory-reducing collection, a few seconds after start, never again; none once stopped", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const collections: unknown[] = [];
    settleHeapSoon({ delayMs: 3_000, collect: (options) => collections.push(options) });
    mock.timers.tick(2_999);
    assert.equal(collections.length, 0, "not while the sidecar is still starting");
    mock.timers.tick(1);
    assert.deepEqual(collections, [{ type: "major", execution: "sync", flavor: "last-resort" }]);
    mock.timers.tick(24 * HOUR); // a simulated day: it is a start-up step, not a schedule
    assert.equal(collections.length, 1);

    const stopped: unknown[] = [];
    settleHeapSoon({ delayMs: 3_000, collect: (options) => stopped.push(options) }).close();
    mock.timers.tick(10_000);
    assert.equal(stopped.length, 0, "a sidecar stopped within its first seconds collects nothing");
  } finally {
    mock.timers.reset();
  }
});

test("settling the heap waits for a quiet second: not in the middle of the instance's first exports", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    let busyUntil = 7_500;
    let elapsed = 0;
    const checks: number[] = [];
    const collections: number[] = [];
    settleHeapSoon({
      delayMs: 3_000,
      quiet: () => {
        checks.push(elapsed);
        return elapsed >= busyUntil;
      },
      collect: () => collections.push(elapsed),
    });
    while (elapsed < HOUR) {
      elapsed += 500;
      mock.timers.tick(500);
    }
    assert.deepEqual(checks, [3_000, 4_000, 5_000, 6_000, 7_000, 8_000], "tried once a second while requests came");
    assert.deepEqual(collections, [8_000], "once, at the first quiet check");

    // Busy for good: it gives up after ten minutes instead of checking all day, and collects nothing.
    busyUntil = Number.POSITIVE_INFINITY;
    checks.length = 0;
    collections.length = 0;
    elapsed = 0;
    const closing = settleHeapSoon({
      delayMs: 3_000,
      quiet: () => {
        checks.push(elapsed);
        return false;
      },
      collect: () => collections.push(elapsed),
    });
    while (elapsed < HOUR) {
      elapsed += 1_000;
      mock.timers.tick(1_000);
    }
    closing.close();
    assert.equal(collections.length, 0);
    assert.ok(checks.length <= 600 && checks.length >= 590, `${checks.length} checks in the simulated hour`);
    assert.ok(checks.at(-1)! <= 600_000, "none after the first ten minutes");
  } finally {
    mock.timers.reset();
  }
});
