import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import pino from "pino";
import { bodyText, Outbox } from "../../src/sidecar/storage/outbox.ts";
import { FileMeasures, type MeasuresUnavailableError, PushedMeasures } from "../../src/sidecar/usage/measures-source.ts";
import { StreamHealth } from "../../src/sidecar/storage/stream-health.ts";
import { UsageSnapshotter, type StoredSnapshot } from "../../src/sidecar/usage/snapshotter.ts";
import { usageMeasures } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/processes.ts";

const HOUR = 3_600_000;
const T0 = Date.parse("2026-11-01T00:00:00Z");

function snapshots(outbox: Outbox): StoredSnapshot[] {
  return [...outbox.history.records("usage")].map((r) => JSON.parse(bodyText(r)) as StoredSnapshot);
}

test("usage windows are contiguous across intervals and a restart; downtime makes one longer window, never a gap", async () => {
  const dir = tempDir();
  let now = T0 + 17_000; // first start, mid-minute: the first window starts exactly here
  const open = () => {
    const outbox = new Outbox(dir, { now: () => now });
    const source = new PushedMeasures(outbox);
    const snapshotter = new UsageSnapshotter({
      outbox,
      source,
      intervalMs: 24 * HOUR,
      retryMs: 1_000,
      logger: pino({ level: "silent" }),
      health: new StreamHealth(pino({ level: "silent" }), "usage"),
      onEnqueued() {},
      now: () => now,
    });
    return { outbox, source, snapshotter };
  };
  let { outbox, source, snapshotter } = open();
  source.store(usageMeasures(3));
  assert.equal(snapshotter.windowFrom(), T0 + 17_000);
  now += 23 * HOUR;
  await snapshotter.tick();
  assert.deepEqual(snapshots(outbox), [], "no window closes before its interval");

  now += 2 * HOUR; // 25 h after start: the first window, exactly 24 h
  await snapshotter.tick();
  await snapshotter.tick(); // a second tick in the same interval repeats nothing
  outbox.close();

  ({ outbox, source, snapshotter } = open()); // restart: the open window is remembered
  now += 24 * HOUR;
  await snapshotter.tick();
  now += 3 * 24 * HOUR + HOUR; // down for three days
  await snapshotter.tick();

  const windows = snapshots(outbox).map((s) => [s.from_timestamp, s.to_timestamp]);
  assert.deepEqual(windows, [
    ["2026-11-01T00:00:17.000Z", "2026-11-02T00:00:17.000Z"],
    ["2026-11-02T00:00:17.000Z", "2026-11-03T00:00:17.000Z"],
    ["2026-11-03T00:00:17.000Z", "2026-11-06T00:00:17.000Z"],
  ]);
  assert.deepEqual(snapshots(outbox)[0]!.measures, usageMeasures(3));
  outbox.close();
});

test("counts that cannot be read postpone the snapshot: nothing is stored, the window stays open, no zero is invented", async () => {
  const dir = tempDir();
  let now = T0;
  const outbox = new Outbox(dir, { now: () => now });
  const file = join(dir, "measures.json");
  const health = new StreamHealth(pino({ level: "silent" }), "usage", () => now);
  const snapshotter = new UsageSnapshotter({
    outbox,
    health,
    source: new FileMeasures(file),
    intervalMs: HOUR,
    retryMs: 1_000,
    logger: pino({ level: "silent" }),
    onEnqueued() {},
    now: () => now,
  });
  snapshotter.windowFrom();
  now += HOUR;
  assert.equal(await snapshotter.tick(), false, "no file yet");
  writeFileSync(file, JSON.stringify({ ...usageMeasures(2), users: -1 }));
  assert.equal(await snapshotter.tick(), false, "a negative count is not a count");
  await assert.rejects(new FileMeasures(file).current(), (err: MeasuresUnavailableError) =>
    /users: must not be negative/.test(err.message),
  );
  assert.deepEqual(snapshots(outbox), []);
  assert.match(health.lastError!.message, /snapshot postponed: usage\.file .*users: must not be negative/, "shown in status");
  writeFileSync(file, JSON.stringify(usageMeasures(2)));
  now += 10 * 60_000;
  assert.equal(await snapshotter.tick(), true);
  assert.deepEqual(
    snapshots(outbox).map((s) => [s.from_timestamp, s.to_timestamp, s.measures.users]),
    [["2026-11-01T00:00:00.000Z", "2026-11-01T01:00:00.000Z", 2]],
  );
  outbox.close();
});

test("the next window's end is waited through the clock's own setTimeout: a test's faster clock and the wait agree", async () => {
  let now = T0;
  const waits: number[] = [];
  const outbox = new Outbox(tempDir(), { now: () => now });
  const start = () => {
    const snapshotter = new UsageSnapshotter({
      outbox,
      source: new PushedMeasures(outbox),
      intervalMs: HOUR,
      retryMs: 1_000,
      logger: pino({ level: "silent" }),
      health: new StreamHealth(pino({ level: "silent" }), "usage"),
      onEnqueued() {},
      now: () => now,
      setClockTimeout: (callback, ms) => {
        waits.push(ms);
        return setTimeout(callback, ms);
      },
    });
    snapshotter.start();
    return snapshotter;
  };
  await start().stop(); // the window opens now
  now += 10 * 60_000;
  await start().stop(); // ten minutes later (a restart): the rest of the hour, on the clock
  outbox.close();
  assert.deepEqual(waits, [HOUR, 50 * 60_000]);
});
