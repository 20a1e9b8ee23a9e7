import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import pino from "pino";
import { Registry } from "prom-client";
import { Forwarder } from "../../src/beacon/forward/forwarder.ts";
import { ForwardMetrics } from "../../src/beacon/forward/metrics.ts";
import type { CollectorTransport, SendResult } from "../../src/beacon/forward/transport.ts";
import { OtlpInserter } from "../../src/beacon/otlp-insert.ts";
import { BeaconStore } from "../../src/beacon/store.ts";
import type { OtlpSignal } from "../../src/protocol/otlp.ts";
import { logsRequest, metricsRequest, tracesRequest } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/processes.ts";
import { HOUR, MINUTE, SimulatedTime } from "../helpers/simulated-time.ts";

// The forwarder's loop on simulated time with the shipped backoff (1 s doubling to 5 min, jitter, Retry-After up to
// 1 h), over a real beacon.db queue, against a collector answering as each case says: how many requests an hour a
// bad collector gets, and that the queue keeps every batch until one is taken.

let time: SimulatedTime;
beforeEach(() => (time = SimulatedTime.start()));
afterEach(() => time.stop());

const ORG = "6f1c8a52-3b7e-4c55-9a51-0d2f4e6b7a10";
const answer = (status: number, body: unknown = {}, contentType = "application/json", retryAfterMs?: number): SendResult => ({
  kind: "answer",
  answer: { status, body, contentType },
  retryAfterMs,
});

/** An OTLP request stored in `store` as the beacon's writer stores one (here on the store's own connection). */
function insertOtlp(
  store: BeaconStore,
  signal: OtlpSignal,
  licenseId: string,
  itemCount: number,
  text: string,
  at: Date,
  forward: boolean,
) {
  const db = store.database;
  db.transaction(() => new OtlpInserter(db).insert({ signal, licenseId, itemCount, text, forward }, at.toISOString()))();
}

/** A forwarder over a fresh beacon.db holding `batches` queued metrics and logs batches, the collector answering `reply`. */
function forwarding(
  reply: (request: number, signal: OtlpSignal, body: any) => SendResult,
  batches = 3,
  allowedMetrics = ["platform_http_requests_latency", "platform_http_requests_failed"],
) {
  const store = new BeaconStore(tempDir());
  for (let i = 0; i < batches; i++) {
    insertOtlp(
      store,
      i % 2 ? "logs" : "metrics",
      "acme-prod",
      1,
      JSON.stringify(i % 2 ? logsRequest() : metricsRequest()),
      new Date(time.now()),
      true,
    );
  }
  const requests: { at: number; signal: OtlpSignal; body: any }[] = [];
  const transport: CollectorTransport = {
    send: async (signal, body) => {
      requests.push({ at: time.now(), signal, body });
      return reply(requests.length, signal, body);
    },
  };
  const registry = new Registry();
  const metrics = new ForwardMetrics(registry);
  const logs: { level: number; msg: string; [key: string]: unknown }[] = [];
  const forwarder = new Forwarder({
    queue: store.forwardQueue,
    transport,
    allowedMetrics,
    organizationOf: () => ORG,
    metrics,
    logger: pino({ level: "warn" }, { write: (line: string) => logs.push(JSON.parse(line)) }),
    minBackoffMs: 1_000,
    maxBackoffMs: 5 * MINUTE,
  });
  forwarder.start();
  return {
    store,
    requests,
    logs,
    between: (fromMs: number, toMs: number) =>
      requests.filter((r) => r.at - requests[0]!.at >= fromMs && r.at - requests[0]!.at < toMs).length,
    backlog: () => store.forwardQueue.backlog(),
    counter: async (name: string) => (await registry.getSingleMetric(name)!.get()).values.reduce((sum, v) => sum + v.value, 0),
    async stop() {
      const stopped = forwarder.stop(1_000);
      await time.advance(2_000);
      await stopped;
      store.close();
    },
  };
}

const failing: [string, (request: number) => SendResult][] = [
  ["a refused connection", () => ({ kind: "unreachable", reason: "the collector could not be reached (ECONNREFUSED)" })],
  ["no answer in time", () => ({ kind: "unreachable", reason: "no answer within telemetry.forward.retry.requestTimeout" })],
  ["500", () => answer(500, { code: 13, message: "boom" })],
  ["503 with Retry-After: 0", () => answer(503, "", "text/plain", 0)],
  ["401 (the headers' key refused)", () => answer(401, "Unauthorized", "text/plain")],
  ["404 (a wrong endpoint)", () => answer(404, "404 page not found", "text/plain")],
  ["200 with an HTML login page", () => answer(200, "<!DOCTYPE html><html>Sign in</html>", "text/html")],
];

for (const [name, reply] of failing) {
  test(`a collector answering ${name} gets ~12 requests an hour once at the 5 min cap, and every batch stays queued`, async () => {
    const f = forwarding(reply);
    await time.advance(3 * HOUR, 5_000);
    assert.ok(f.between(0, HOUR) <= 25, `${f.between(0, HOUR)} requests in the first hour`);
    const later = f.between(HOUR, 3 * HOUR);
    assert.ok(later >= 20 && later <= 26, `${later} requests in hours 2-3`);
    assert.equal((await f.backlog()).batches, 3, "nothing dropped");
    await f.stop();
  });
}

test("a 429 with Retry-After: 1200 is waited out (3 requests an hour), then the backlog drains once the collector takes it", async () => {
  let up = false;
  const f = forwarding(() => (up ? answer(200) : answer(429, "", "text/plain", 20 * MINUTE)));
  await time.advance(2 * HOUR, 5_000);
  assert.ok(f.between(HOUR, 2 * HOUR) >= 2 && f.between(HOUR, 2 * HOUR) <= 4, `${f.between(HOUR, 2 * HOUR)} requests in hour 2`);
  up = true;
  await time.advance(21 * MINUTE, 5_000);
  assert.deepEqual(await f.backlog(), { batches: 0, bytes: 0, oldestReceivedAt: null });
  await f.stop();
});

test("a collector back after an outage gets the whole backlog within one backoff cap, each batch once, with the license's ids", async () => {
  let up = false;
  const f = forwarding(() => (up ? answer(200) : { kind: "unreachable", reason: "refused" }), 6, ["platform_http_requests_latency"]);
  await time.advance(2 * HOUR, 5_000);
  const failedRequests = f.requests.length;
  up = true;
  await time.advance(5 * MINUTE + 5_000, 1_000);
  assert.equal((await f.backlog()).batches, 0);
  const delivered = f.requests.slice(failedRequests);
  // One round: the three metrics batches in one request, the three logs batches in another.
  assert.deepEqual(delivered.map((r) => r.signal).sort(), ["logs", "metrics"]);
  for (const r of delivered) {
    const resources = r.body[r.signal === "metrics" ? "resourceMetrics" : "resourceLogs"];
    assert.equal(resources.length, 3);
    for (const entry of resources) {
      const attributes = Object.fromEntries(entry.resource.attributes.map((a: any) => [a.key, a.value.stringValue]));
      assert.equal(attributes["license.id"], "acme-prod");
      assert.equal(attributes["organization.id"], ORG);
    }
  }
  await time.advance(HOUR, 10_000);
  assert.equal(f.requests.length, failedRequests + 2, "then quiet: an empty queue sends nothing");
  // Three metrics batches, each with one data point of a metric not allowed: counted once, not once per attempt.
  assert.equal(await f.counter("egress_beacon_forward_filtered_data_points_total"), 3);
  assert.equal(await f.counter("egress_beacon_forward_batches_total"), 6);
  assert.ok(failedRequests > 10);
  assert.equal(await f.counter("egress_beacon_forward_requests_total"), failedRequests + 2);
  await f.stop();
});

test("once the collector has taken a request, a batch it refuses (400) is dropped alone: the others of its request are delivered", async () => {
  // One batch is taken first (the evidence that this collector takes our requests). Then a request of three holding
  // the poison one is refused, each of the three is sent alone, and only the poison one is refused again.
  const f = forwarding((_n, _signal, body) => {
    const text = JSON.stringify(body);
    return text.includes("POISON") ? answer(400, { code: 3, message: "invalid" }) : answer(200);
  }, 0);
  const poison = metricsRequest();
  poison.resourceMetrics[0]!.resource.attributes.push({ key: "env", value: { stringValue: "POISON" } });
  insertOtlp(f.store, "metrics", "acme-prod", 1, JSON.stringify(metricsRequest()), new Date(time.now()), true);
  await time.advance(5_000);
  assert.equal(f.requests.length, 1);
  for (const body of [metricsRequest(), poison, metricsRequest()])
    insertOtlp(f.store, "metrics", "acme-prod", 1, JSON.stringify(body), new Date(time.now()), true);
  await time.advance(HOUR, 5_000);
  // 1 + the refused request of three + three alone; then nothing more.
  assert.equal(f.requests.length, 5);
  assert.equal((await f.backlog()).batches, 0);
  await f.stop();
});

const POISONED = (_n: number, _signal: OtlpSignal, body: unknown) =>
  JSON.stringify(body).includes("POISON") ? answer(400, { code: 3, message: "invalid" }) : answer(200);

/** A traces batch of one span named POISON, which the collector refuses. */
function poisonSpan() {
  const body = tracesRequest();
  body.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.name = "POISON";
  return body;
}

/** The spans the collector took (2xx) of each license. */
function deliveredSpans(requests: { signal: OtlpSignal; body: any }[], delivered: (body: unknown) => boolean) {
  const spans: Record<string, number> = {};
  for (const r of requests.filter((r) => r.signal === "traces" && delivered(r.body))) {
    for (const entry of r.body.resourceSpans) {
      const license = entry.resource.attributes.find((a: any) => a.key === "license.id").value.stringValue;
      spans[license] = (spans[license] ?? 0) + entry.scopeSpans.flatMap((s: any) => s.spans).length;
    }
  }
  return spans;
}

test("from a fresh start, one license's refused batch merged with another's: the good ones are delivered, the refused one dropped", async () => {
  // The review's reproduction: nothing taken yet since start; beta's span the collector refuses, then acme's three.
  const f = forwarding(POISONED, 0);
  insertOtlp(f.store, "traces", "beta", 1, JSON.stringify(poisonSpan()), new Date(time.now()), true);
  for (let i = 0; i < 3; i++) insertOtlp(f.store, "traces", "acme-prod", 1, JSON.stringify(tracesRequest()), new Date(time.now()), true);
  await time.advance(5_000);
  // The request of four refused, then each alone: beta's refused, acme's three taken; beta's then dropped.
  assert.equal(f.requests.length, 5);
  assert.deepEqual(
    deliveredSpans(f.requests, (body) => !JSON.stringify(body).includes("POISON")),
    { "acme-prod": 3 },
  );
  assert.equal((await f.backlog()).batches, 0);
  assert.equal(await f.counter("egress_beacon_forward_dropped_batches_total"), 1);
  const dropped = f.logs.filter((l) => l.level === 50);
  assert.equal(dropped.length, 1);
  assert.equal(dropped[0]!.licenseId, "beta");
  assert.match(dropped[0]!.msg, /refused a forwarded batch; it is dropped/);
  await time.advance(HOUR, 10_000);
  assert.equal(f.requests.length, 5, "then quiet: nothing left to send");
  await f.stop();
});

test("from a fresh start, a refused batch alone is kept and retried alone with backoff, and holds up no other license's batches", async () => {
  const f = forwarding(POISONED, 0);
  insertOtlp(f.store, "traces", "beta", 1, JSON.stringify(poisonSpan()), new Date(time.now()), true);
  await time.advance(HOUR, 5_000);
  // Nothing taken yet: it may be the collector that is wrong, so the batch stays, sent alone once per backoff.
  assert.equal((await f.backlog()).batches, 1);
  assert.ok(f.requests.length >= 10 && f.requests.length <= 25, `${f.requests.length} requests in the first hour`);
  assert.equal(await f.counter("egress_beacon_forward_dropped_batches_total"), 0);
  const before = f.requests.length;
  insertOtlp(f.store, "logs", "acme-prod", 1, JSON.stringify(logsRequest()), new Date(time.now()), true);
  insertOtlp(f.store, "traces", "acme-prod", 1, JSON.stringify(tracesRequest()), new Date(time.now()), true);
  await time.advance(5 * MINUTE + 5_000, 1_000);
  // Within one backoff: acme's two delivered, which shows the collector takes requests, and beta's dropped.
  assert.equal((await f.backlog()).batches, 0);
  assert.deepEqual(
    deliveredSpans(f.requests.slice(before), (body) => !JSON.stringify(body).includes("POISON")),
    { "acme-prod": 1 },
  );
  assert.equal(await f.counter("egress_beacon_forward_batches_total"), 2);
  assert.equal(await f.counter("egress_beacon_forward_dropped_batches_total"), 1);
  await f.stop();
});

test("a collector refusing everything (400) from start keeps every batch for a day, ~12 rounds an hour, each batch sent alone once", async () => {
  const f = forwarding(() => answer(400, { code: 3, message: "bad" }));
  await time.advance(3 * HOUR, 5_000);
  assert.equal((await f.backlog()).batches, 3, "nothing dropped: the collector is misconfigured, not fed a poison batch");
  // A round's requests go at one instant: two metrics batches merged and one logs batch.
  const rounds = (from: number, to: number) =>
    new Set(f.requests.filter((r) => r.at - f.requests[0]!.at >= from && r.at - f.requests[0]!.at < to).map((r) => r.at)).size;
  assert.ok(rounds(HOUR, 3 * HOUR) >= 20 && rounds(HOUR, 3 * HOUR) <= 26, `${rounds(HOUR, 3 * HOUR)} rounds in hours 2-3`);
  // The first round: the merged request, each of its two alone, the logs batch; then two requests a round.
  assert.equal(f.requests.length, 4 + 2 * (rounds(0, 3 * HOUR) - 1));
  assert.equal(await f.counter("egress_beacon_forward_dropped_batches_total"), 0);
  // A day after they were stored, batches refused alone are dropped, each with an error line: forwarding cannot
  // stall for good on batches no collector takes.
  await time.advance(21 * HOUR - MINUTE, 60_000);
  assert.equal((await f.backlog()).batches, 3);
  await time.advance(7 * MINUTE, 10_000);
  assert.equal((await f.backlog()).batches, 0);
  assert.equal(await f.counter("egress_beacon_forward_dropped_batches_total"), 3);
  assert.equal(f.logs.filter((l) => l.level === 50 && /refused for a day/.test(l.msg)).length, 3);
  await f.stop();
});
