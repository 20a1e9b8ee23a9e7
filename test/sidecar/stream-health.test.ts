import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { StreamHealth } from "../../src/sidecar/storage/stream-health.ts";
import { createLogger } from "../../src/log.ts";

test("blocked egress logs one warning, a summary at most every 10 minutes, and one recovery line", () => {
  const lines: { msg: string; failures?: number }[] = [];
  const sink = new Writable({
    write: (chunk, _enc, done) => {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  let now = 0;
  const health = new StreamHealth(createLogger("info", sink), "billing", () => now);
  // A firewalled install: one failure every 5 s for an hour.
  for (; now < 3_600_000; now += 5_000) health.failure("beacon unreachable");
  health.success();
  const messages = lines.map((l) => l.msg);
  assert.equal(messages.filter((m) => m === "stream failing").length, 1);
  assert.equal(messages.filter((m) => m === "stream still failing").length, 5, "one summary per 10 minutes after the first warning");
  assert.equal(messages.filter((m) => m === "stream recovered").length, 1);
  assert.equal(lines.at(-1)!.failures, 720);
  assert.equal(health.lastSuccessAt, now);
  assert.equal(health.lastError?.message, "beacon unreachable");
});
