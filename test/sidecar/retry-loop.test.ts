import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import { backoffDelay, MAX_RETRY_AFTER_MS, retryLoop } from "../../src/sidecar/shippers/retry-loop.ts";
import { HOUR, MINUTE, SimulatedTime } from "../helpers/simulated-time.ts";

let time: SimulatedTime;
beforeEach(() => {
  time = SimulatedTime.start();
});
afterEach(() => time.stop());

/** Attempts at simulated times, failing with `wait` (a Retry-After in ms, 0 for none) until `succeedAt` attempts. */
function attempts(succeedAfter: number, wait: number | undefined) {
  const at: number[] = [];
  const attempt = async () => {
    at.push(time.now());
    if (at.length <= succeedAfter) throw Object.assign(new Error("503"), { wait });
    return "done";
  };
  return { at, attempt, retryAfter: (error: unknown) => (error as { wait?: number }).wait };
}

test("the backoff doubles from min with jitter in [1, 2) and stays at max", () => {
  const schedule = { minMs: 1_000, maxMs: 60_000, signal: new AbortController().signal };
  assert.deepEqual(
    [1, 2, 3, 4, 10].map((n) => backoffDelay(n, { ...schedule, random: () => 0 })),
    [1_000, 2_000, 4_000, 8_000, 60_000],
  );
  assert.equal(backoffDelay(1, { ...schedule, random: () => 0.999 }), 1_999);
});

test("a failing receiver is retried on the backoff: per simulated hour, about one attempt per max backoff once capped", async () => {
  const { at, attempt, retryAfter } = attempts(Infinity, 0);
  const stop = new AbortController();
  const done = retryLoop(attempt, { minMs: 1_000, maxMs: 5 * MINUTE, signal: stop.signal, random: () => 0 }, retryAfter).catch(
    () => "stopped",
  );
  await time.advance(HOUR, 1_000);
  // 1+2+4+...+256 s (9 attempts in 511 s), then one per 5 minutes: about 10 more in the hour.
  assert.ok(at.length >= 18 && at.length <= 22, `${at.length} attempts in an hour`);
  stop.abort();
  assert.equal(await done, "stopped", "stopping ends the wait at once and the loop with the last error");
});

test("a Retry-After longer than the backoff is waited out, even past max, up to an hour", async () => {
  const { at, attempt, retryAfter } = attempts(2, 20 * MINUTE);
  const done = retryLoop(attempt, { minMs: 1_000, maxMs: MINUTE, signal: new AbortController().signal, random: () => 0 }, retryAfter);
  await time.advance(45 * MINUTE, 10_000);
  assert.equal(await done, "done");
  assert.deepEqual(
    at.map((t) => t - at[0]!),
    [0, 20 * MINUTE, 40 * MINUTE],
  );

  const capped = attempts(1, 10 * HOUR);
  const second = retryLoop(capped.attempt, { minMs: 1_000, maxMs: MINUTE, signal: new AbortController().signal }, capped.retryAfter);
  await time.advance(MAX_RETRY_AFTER_MS + MINUTE, MINUTE);
  assert.equal(await second, "done");
  assert.equal(capped.at[1]! - capped.at[0]!, MAX_RETRY_AFTER_MS, "a ten-hour Retry-After waits an hour");
});

test("an error the caller does not retry ends the loop at once", async () => {
  const { at, attempt } = attempts(Infinity, undefined);
  await assert.rejects(
    retryLoop(attempt, { minMs: 1_000, maxMs: MINUTE, signal: new AbortController().signal }, () => undefined),
    /503/,
  );
  assert.equal(at.length, 1);
});
