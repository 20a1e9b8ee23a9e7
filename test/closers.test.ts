import assert from "node:assert/strict";
import { test } from "node:test";
import { Closers } from "../src/closers.ts";

test("parts close in reverse order, every one even when one before it throws, and the failure still surfaces", async () => {
  const closed: string[] = [];
  const closers = new Closers();
  closers.add(() => closed.push("outbox"));
  closers.add(async () => {
    closed.push("shippers");
    throw new Error("a shipper would not stop");
  });
  closers.add(() => closed.push("own telemetry"));
  await assert.rejects(closers.closeAll(), /a shipper would not stop/);
  assert.deepEqual(closed, ["own telemetry", "shippers", "outbox"]);
  await closers.closeAll(); // nothing is closed twice
  assert.deepEqual(closed, ["own telemetry", "shippers", "outbox"]);
});

test("two failing closers: both are reported", async () => {
  const closers = new Closers();
  closers.add(() => {
    throw new Error("first");
  });
  closers.add(() => {
    throw new Error("second");
  });
  const err = await closers.closeAll().then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof AggregateError);
  assert.deepEqual(
    err.errors.map((e: Error) => e.message),
    ["second", "first"],
  );
});

test("a failed start-up closes what it had started and rethrows the start-up's own error", async () => {
  const closed: string[] = [];
  const closers = new Closers();
  await assert.rejects(
    closers.starting(async () => {
      closers.add(() => closed.push("storage"));
      closers.add(() => {
        throw new Error("a closer's own failure is not the news");
      });
      throw new Error("listen EADDRINUSE");
    }),
    /EADDRINUSE/,
  );
  assert.deepEqual(closed, ["storage"]);
});
