import assert from "node:assert/strict";
import { mock, test } from "node:test";
import { settleHeapSoon } from "../../src/sidecar/settle-heap.ts";

test("settling the heap: one memory-reducing collection, a few seconds after start, never again; none once stopped", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const collections: unknown[] = [];
    settleHeapSoon(3_000, (options) => collections.push(options));
    mock.timers.tick(2_999);
    assert.equal(collections.length, 0, "not while the sidecar is still starting");
    mock.timers.tick(1);
    assert.deepEqual(collections, [{ type: "major", execution: "sync", flavor: "last-resort" }]);
    mock.timers.tick(24 * 3_600_000); // a simulated day: it is a start-up step, not a schedule
    assert.equal(collections.length, 1);

    const stopped: unknown[] = [];
    settleHeapSoon(3_000, (options) => stopped.push(options)).close();
    mock.timers.tick(10_000);
    assert.equal(stopped.length, 0, "a sidecar stopped within its first seconds collects nothing");
  } finally {
    mock.timers.reset();
  }
});
