import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import pino from "pino";
import { BeaconUnreachableError, type BeaconResponse } from "../../src/sidecar/egress/beacon-client.ts";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { billingPolicy } from "../../src/sidecar/shippers/billing.ts";
import type { BeaconTransport } from "../../src/sidecar/egress/beacon-client.ts";
import { Shipper, type StreamPolicy } from "../../src/sidecar/shippers/shipper.ts";
import { telemetryPolicy } from "../../src/sidecar/shippers/telemetry.ts";
import { usagePolicy } from "../../src/sidecar/shippers/usage.ts";
import { StreamHealth } from "../../src/sidecar/storage/stream-health.ts";
import { traceTransaction } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/processes.ts";
import { HOUR, MINUTE, SimulatedTime } from "../helpers/simulated-time.ts";

// Each shipper's loop on simulated time, with the shipped defaults (flush 5 s, backoff 1 s..5 min, 4 in flight):
// how many requests each kind of beacon answer leads to per hour, and what happens to the records.

let time: SimulatedTime;
beforeEach(() => (time = SimulatedTime.start()));
afterEach(() => time.stop());

const streams: { name: string; policy: StreamPolicy; record: () => { recordId?: string; body: string }; ok: unknown }[] = [
  {
    name: "billing",
    policy: billingPolicy("lic-key", 500),
    record: () => ({ recordId: crypto.randomUUID(), body: JSON.stringify(traceTransaction()) }),
    ok: { inserted_count: 1 },
  },
  {
    name: "metrics",
    policy: telemetryPolicy("metrics", 4 << 20),
    record: () => ({ body: '{"resourceMetrics":[{"scopeMetrics":[]}]}' }),
    ok: { partialSuccess: {} },
  },
  {
    name: "usage",
    policy: usagePolicy("lic-key"),
    record: () => ({
      recordId: new Date(time.now()).toISOString(),
      body: JSON.stringify({ from_timestamp: "2026-10-31T00:00:00+00:00", to_timestamp: "2026-11-01T00:00:00+00:00", measures: {} }),
    }),
    ok: { inserted_count: 1 },
  },
];

/** A shipper over a real outbox holding one record of its stream, against a client answering `answer` at once. */
function shipper(stream: (typeof streams)[number], answer: (request: number, payload: string) => BeaconResponse) {
  const outbox = new Outbox(tempDir(), { now: time.now });
  outbox.enqueue(stream.policy.stream, [stream.record()]);
  const requests: number[] = [];
  let unauthorized = 0;
  const client: BeaconTransport = {
    post: async (_path, payload) => {
      requests.push(time.now());
      return answer(requests.length, payload.toString());
    },
  };
  const logger = pino({ level: "silent" });
  const health = new StreamHealth(logger, stream.policy.stream, time.now);
  const s = new Shipper({
    policy: stream.policy,
    outbox,
    client,
    health,
    logger,
    token: () => undefined,
    onUnauthorized: () => unauthorized++,
    flushMs: 5_000,
    concurrency: 4,
    minBackoffMs: 1_000,
    maxBackoffMs: 5 * MINUTE,
    now: time.now,
  });
  s.start();
  return {
    outbox,
    health,
    unauthorized: () => unauthorized,
    between: (fromMs: number, toMs: number) => requests.filter((at) => at - requests[0]! >= fromMs && at - requests[0]! < toMs).length,
    total: () => requests.length,
    async stop() {
      const stopped = s.stop(1_000);
      await time.advance(2_000);
      await stopped;
      outbox.close();
    },
  };
}

const failing: [string, (request: number) => BeaconResponse][] = [
  ["500", () => ({ status: 500, body: { detail: "boom" } })],
  ["503 with Retry-After: 0", () => ({ status: 503, body: "", retryAfterMs: 0 })],
  ["429 with no Retry-After", () => ({ status: 429, body: "" })],
  ["403 (license refused)", () => ({ status: 403, body: { code: "EGRESS_ERR_LICENSE_EXPIRED" } })],
  ["401 (token refused)", () => ({ status: 401, body: { code: "EGRESS_ERR_TOKEN_INVALID" } })],
  ["404 (a wrong beaconUrl)", () => ({ status: 404, body: "Not Found", contentType: "text/plain" })],
  [
    "200 with an HTML page (a captive portal)",
    () => ({ status: 200, body: "<!DOCTYPE html><html>Sign in</html>", contentType: "text/html" }),
  ],
  [
    "an unreachable beacon",
    () => {
      throw new BeaconUnreachableError("beacon unreachable: ECONNREFUSED");
    },
  ],
];

/** A stream that documents an answer fails without it (answer-rules.test.ts has the others, which deliver). */
const withoutDocumentedAnswer: typeof failing = [
  ["200 with an empty body", () => ({ status: 200, body: undefined, contentType: "" })],
  ["204", () => ({ status: 204, body: undefined })],
];

for (const stream of streams) {
  for (const [name, answer] of [...failing, ...(stream.policy.answer.documented ? withoutDocumentedAnswer : [])]) {
    test(`${stream.name}: a beacon answering ${name} is retried with backoff, ~12 requests an hour once at maxBackoff; the record is kept`, async () => {
      const s = shipper(stream, answer);
      await time.advance(3 * HOUR);
      assert.ok(s.between(0, HOUR) <= 25, `${s.between(0, HOUR)} requests in the first hour`);
      assert.ok(s.between(HOUR, 3 * HOUR) >= 12 && s.between(HOUR, 3 * HOUR) <= 26, `${s.between(HOUR, 3 * HOUR)} requests in hours 2-3`);
      const counts = s.outbox.stats.counts(stream.policy.stream);
      assert.deepEqual([counts.pending + counts.sending, counts.completed, counts.failed], [1, 0, 0], "kept, not acked, not dead-lettered");
      assert.ok(s.health.lastError, "the failure shows in status");
      if (name === "401 (token refused)") assert.equal(s.unauthorized(), s.total(), "each 401 asks for a new token");
      await s.stop();
    });
  }

  test(`${stream.name}: a beacon that answers at once with its documented answer gets one request for one record, then none`, async () => {
    const s = shipper(stream, () => ({ status: 200, body: stream.ok, contentType: "application/json" }));
    await time.advance(HOUR);
    assert.equal(s.total(), 1);
    const counts = s.outbox.stats.counts(stream.policy.stream);
    assert.equal(counts.pending + counts.sending + counts.failed, 0);
    assert.equal(s.health.lastError, null);
    await s.stop();
  });
}

test("billing: an HTML 200 is named in status as a proxy or login page, counted in num_failed_send_attempts, and delivery resumes when the beacon answers", async () => {
  let portal = true;
  let lastPayload = "";
  const s = shipper(streams[0]!, (_n, payload) => {
    lastPayload = payload;
    return portal
      ? { status: 200, body: "<html><body>Welcome to Hotel Wi-Fi</body></html>", contentType: "text/html" }
      : { status: 200, body: { inserted_count: 1 }, contentType: "application/json" };
  });
  await time.advance(10 * MINUTE);
  assert.match(s.health.lastError!.message, /answered 200 with HTML.*proxy or login page\?/);
  const failedSends = s.total();
  portal = false;
  await time.advance(10 * MINUTE);
  const counts = s.outbox.stats.counts("billing");
  assert.deepEqual([counts.pending, counts.completed], [0, 1]);
  assert.ok(failedSends >= 5, `${failedSends} failed sends`);
  assert.equal(
    JSON.parse(lastPayload).trace_transactions[0].num_failed_send_attempts,
    failedSends,
    "the delivered record counts every HTML answer",
  );
  await s.stop();
});

test("billing: an answer claiming more inserted than sent, or without inserted_count, completes nothing", async () => {
  for (const body of [{ inserted_count: 2 }, { ok: true }, { inserted_count: -1 }, { inserted_count: "1" }]) {
    const s = shipper(streams[0]!, () => ({ status: 200, body, contentType: "application/json" }));
    await time.advance(MINUTE);
    assert.equal(s.outbox.stats.counts("billing").completed, 0, JSON.stringify(body));
    assert.match(s.health.lastError!.message, /answered 200 with JSON, not the beacon's answer \{inserted_count\}/);
    await s.stop();
  }
});

test("billing: a batch the beacon refuses (422) is split to find the bad record, then the loop stops sending", async () => {
  const s = shipper(streams[0]!, () => ({ status: 422, body: { detail: [{ loc: ["body"], msg: "bad", type: "x" }] } }));
  await time.advance(HOUR);
  // One record: refused once and dead-lettered; nothing more is sent for it.
  assert.equal(s.total(), 1);
  assert.equal(s.outbox.stats.counts("billing").failed, 1);
  await s.stop();
});
