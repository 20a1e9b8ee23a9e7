import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import pino from "pino";
import { BeaconUnreachableError, parseRetryAfter, type BeaconResponse } from "../../src/sidecar/egress/beacon-client.ts";
import { billingPolicy } from "../../src/sidecar/shippers/billing.ts";
import type { BeaconTransport } from "../../src/sidecar/egress/beacon-client.ts";
import { Shipper, type ShipperOptions, type StreamPolicy } from "../../src/sidecar/shippers/shipper.ts";
import { telemetryPolicy } from "../../src/sidecar/shippers/telemetry.ts";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { StreamHealth } from "../../src/sidecar/storage/stream-health.ts";
import { traceTransaction } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/processes.ts";
import { HOUR, MINUTE, SimulatedTime } from "../helpers/simulated-time.ts";

// Unit tests of one shipper on simulated time, against a stand-in beacon: each path a batch can take, told by what
// the operator would see (records delivered, kept or dead-lettered; how many requests, and when).

let time: SimulatedTime;
let t0: number;
beforeEach(() => {
  time = SimulatedTime.start();
  t0 = time.now();
});
afterEach(() => time.stop());

/** One request as the beacon got it: when (ms after the start), the token, the audit metadata, the parsed body; whether it was cut. */
interface Request {
  at: number;
  token: string | undefined;
  audit: { stream: string; records: number };
  body: any;
  cut: boolean;
}

type Answer = (request: Request) => BeaconResponse | Promise<BeaconResponse>;

/** The shipped defaults' shape (flush 5 s, backoff 1 s..5 min, 4 in flight) over a real outbox, posting to `answer`. */
function harness(policy: StreamPolicy, answer: Answer, overrides: Partial<ShipperOptions> = {}) {
  const outbox = new Outbox(tempDir(), { now: time.now });
  const requests: Request[] = [];
  const client: BeaconTransport = {
    post(_path, payload, { token, signal, audit }) {
      const request = { at: time.now() - t0, token, audit, body: JSON.parse(payload.toString()), cut: false };
      requests.push(request);
      // As the real client does, an aborted signal ends the request at once, with or without an answer.
      return new Promise((resolve, reject) => {
        let answered = false;
        signal?.addEventListener(
          "abort",
          () => {
            request.cut = !answered;
            reject(signal.reason);
          },
          { once: true },
        );
        Promise.resolve()
          .then(() => answer(request))
          .then((response) => {
            answered = true;
            resolve(response);
          }, reject);
      });
    },
  };
  const logger = pino({ level: "silent" });
  const health = new StreamHealth(logger, policy.stream, time.now);
  const shipper = new Shipper({
    policy,
    outbox,
    client,
    health,
    logger,
    token: () => undefined,
    onUnauthorized: () => {},
    flushMs: 5_000,
    concurrency: 4,
    minBackoffMs: 1_000,
    maxBackoffMs: 5 * MINUTE,
    now: time.now,
    ...overrides,
  });
  return {
    outbox,
    requests,
    health,
    shipper,
    counts: () => {
      const { pending, sending, completed, failed } = outbox.stats.counts(policy.stream);
      return { pending, sending, completed, failed };
    },
    async stop() {
      const stopped = shipper.stop(1_000);
      await time.advance(2_000);
      await stopped;
      outbox.close();
    },
  };
}

/** Billing transactions with these ids, enqueued. */
function enqueueBilling(outbox: Outbox, ids: readonly string[]): void {
  outbox.enqueue(
    "billing",
    ids.map((id) => ({ recordId: id, body: JSON.stringify(traceTransaction({ id })) })),
  );
}

const ids = (request: Request): string[] => request.body.trace_transactions.map((t: { id: string }) => t.id);
const failedSends = (request: Request): number[] =>
  request.body.trace_transactions.map((t: { num_failed_send_attempts: number }) => t.num_failed_send_attempts);
const inserted = (request: Request): BeaconResponse => ({
  status: 200,
  body: { inserted_count: request.body.trace_transactions.length },
  contentType: "application/json",
});
/** Answers with `failures` in turn, then with the beacon's answer. */
const failingFirst = (...failures: ((request: Request) => BeaconResponse)[]): Answer => {
  let n = 0;
  return (request) => (failures[n] ? failures[n++]!(request) : inserted(request));
};
const status =
  (code: number, extra: Partial<BeaconResponse> = {}) =>
  () => ({ status: code, body: { detail: `answer ${code}` }, ...extra });
/** Time between consecutive requests (ms). */
const gaps = (requests: readonly Request[]) => requests.slice(1).map((r, i) => r.at - requests[i]!.at);

test("a backlog goes in full batches at once, several in flight; the partial rest waits flushMs for more records", async () => {
  const s = harness(billingPolicy("lic-key", 3), inserted);
  const all = ["a", "b", "c", "d", "e", "f", "g"];
  enqueueBilling(s.outbox, all);
  s.shipper.start();
  await time.advance(10_000);
  assert.deepEqual(
    s.requests.map((r) => [r.at, r.audit.records]),
    [
      [0, 3],
      [0, 3],
      [5_000, 1],
    ],
  );
  assert.deepEqual(s.requests.flatMap(ids), all, "each record once, oldest first");
  assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 7, failed: 0 });
  await s.stop();
});

test("telemetry batches stop at about batchBytes; a single record over it still goes, alone and at once", async () => {
  const s = harness(telemetryPolicy("logs", 250), () => ({ status: 200, body: {}, contentType: "application/json" }));
  const record = (tag: string, pad: number) => ({ body: JSON.stringify({ resourceLogs: [{ tag, pad: "x".repeat(pad) }] }) }); // ~pad + 40 bytes
  s.outbox.enqueue("logs", [record("a", 80), record("b", 80), record("big", 1_000), record("c", 80)]);
  s.shipper.start();
  await time.advance(10_000);
  const tags = (r: Request) => r.body.resourceLogs.map((entry: { tag: string }) => entry.tag);
  assert.deepEqual(
    s.requests.map((r) => [r.at, tags(r)]),
    [
      [0, ["a", "b"]],
      [0, ["big"]],
      [5_000, ["c"]],
    ],
    "merged up to 250 bytes; the rest waits for more",
  );
  assert.equal(s.outbox.stats.counts("logs").delivered, 4);
  assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 0, failed: 0 }, "delivered telemetry is deleted");
  await s.stop();
});

test("a failed-send count past what the beacon stores (from an older intake) is sent at the bound, not refused for it", async () => {
  const s = harness(billingPolicy("lic-key", 2), inserted);
  s.outbox.enqueue("billing", [{ recordId: "old", body: JSON.stringify(traceTransaction({ id: "old" })), attempts: 2 ** 31 + 5 }]);
  s.shipper.start();
  await time.advance(10_000);
  assert.deepEqual(s.requests.map(failedSends), [[2 ** 31 - 1]]);
  assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 1, failed: 0 });
  await s.stop();
});

test("a refused batch is halved until the bad record is alone: only it is dead-lettered, each request audited with its record count", async () => {
  const s = harness(billingPolicy("lic-key", 4), (request) =>
    ids(request).includes("bad")
      ? { status: 422, body: { code: "BEACON_ERR_INVALID", detail: "tenant_id: not a UUID" } }
      : inserted(request),
  );
  enqueueBilling(s.outbox, ["a", "bad", "c", "d"]);
  s.shipper.start();
  await time.advance(HOUR);
  assert.deepEqual(
    s.requests.map(ids),
    [["a", "bad", "c", "d"], ["a", "bad"], ["a"], ["bad"], ["c", "d"]],
    "nothing sent for the dead letter after its refusal",
  );
  assert.deepEqual(
    s.requests.map((r) => r.audit),
    s.requests.map((r) => ({ stream: "billing", records: ids(r).length })),
  );
  assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 3, failed: 1 });
  assert.deepEqual(s.outbox.stats.deadLetters("billing"), [
    { recordId: "bad", error: "beacon answered 422 BEACON_ERR_INVALID", attempts: 0 },
  ]);
  assert.deepEqual(
    [s.requests[2], s.requests[4]].flatMap((r) => failedSends(r!)),
    [0, 0, 0],
    "a refusal is not a failed send of the good records",
  );
  assert.equal(s.health.lastError, null, "a dead letter is shown as such, not as a failing stream");
  await s.stop();
});

for (const code of [400, 413, 422]) {
  test(`a record answered ${code} is dead-lettered with the failed sends before it, never sent again`, async () => {
    const s = harness(billingPolicy("lic-key", 1), failingFirst(status(503), status(503), status(code)));
    enqueueBilling(s.outbox, ["r"]);
    s.shipper.start();
    await time.advance(HOUR);
    assert.equal(s.requests.length, 3);
    assert.deepEqual(
      s.requests.map((r) => failedSends(r)[0]),
      [0, 1, 2],
    );
    assert.deepEqual(s.outbox.stats.deadLetters("billing"), [{ recordId: "r", error: `beacon answered ${code}`, attempts: 2 }]);
    assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 0, failed: 1 });
    await s.stop();
  });
}

const retryAfters: [string, (now: number) => string, number][] = [
  ["in seconds", () => "120", 2 * MINUTE],
  ["as an HTTP date, past maxBackoff", (now) => new Date(now + 10 * MINUTE).toUTCString(), 10 * MINUTE],
  ["of two hours, capped at one", () => "7200", HOUR],
];
for (const [name, header, expectedMs] of retryAfters) {
  test(`a 503 with Retry-After ${name} is retried only after it, however short the backoff`, async () => {
    const s = harness(
      billingPolicy("lic-key", 1),
      failingFirst(() => ({ status: 503, body: "", retryAfterMs: parseRetryAfter(header(time.now()), time.now()) })),
    );
    enqueueBilling(s.outbox, ["r"]);
    s.shipper.start();
    await time.advance(expectedMs - 2_000);
    assert.equal(s.requests.length, 1, "nothing before Retry-After");
    assert.equal(s.counts().pending, 1, "kept meanwhile");
    await time.advance(4_000);
    assert.equal(s.requests.length, 2);
    assert.ok(s.requests[1]!.at >= expectedMs && s.requests[1]!.at <= expectedMs + 1_000, `retried at ${s.requests[1]!.at} ms`);
    assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 1, failed: 0 });
    await s.stop();
  });
}

test("a 401 asks for the license to be verified again, and the batch is retried with the fresh token", async () => {
  let token = "stale";
  let verifications = 0;
  const s = harness(
    billingPolicy("lic-key", 1),
    (request) => (request.token === "fresh" ? inserted(request) : { status: 401, body: { code: "EGRESS_ERR_TOKEN_INVALID" } }),
    {
      token: () => token,
      onUnauthorized: () => {
        verifications++;
        token = "fresh";
      },
    },
  );
  enqueueBilling(s.outbox, ["r"]);
  s.shipper.start();
  await time.advance(MINUTE);
  assert.equal(verifications, 1);
  assert.deepEqual(
    s.requests.map((r) => [r.token, failedSends(r)[0]]),
    [
      ["stale", 0],
      ["fresh", 1],
    ],
    "the 401 counts as a failed send",
  );
  assert.ok(gaps(s.requests)[0]! >= 1_000 && gaps(s.requests)[0]! <= 3_000, "after the first backoff step");
  assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 1, failed: 0 });
  await s.stop();
});

for (const code of [403, 404, 408, 409, 429]) {
  test(`a ${code} is not the record's fault: kept, retried after backoff, delivered once the beacon takes it`, async () => {
    const s = harness(billingPolicy("lic-key", 1), failingFirst(status(code)));
    enqueueBilling(s.outbox, ["r"]);
    s.shipper.start();
    await time.advance(MINUTE);
    assert.deepEqual(
      s.requests.map((r) => failedSends(r)[0]),
      [0, 1],
    );
    assert.ok(gaps(s.requests)[0]! >= 1_000 && gaps(s.requests)[0]! <= 3_000);
    assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 1, failed: 0 });
    assert.equal(s.health.lastError?.message, `beacon answered ${code}`);
    await s.stop();
  });
}

const outages: [string, () => BeaconResponse][] = [
  ["500", status(500)],
  ["503", status(503)],
  [
    "an unreachable beacon",
    () => {
      throw new BeaconUnreachableError("beacon unreachable at http://127.0.0.1:9: ECONNREFUSED");
    },
  ],
];
for (const [name, failure] of outages) {
  test(`${name}: retried with doubling backoff up to maxBackoff, the record kept and its failed sends counted`, async () => {
    const s = harness(billingPolicy("lic-key", 1), failingFirst(...Array(6).fill(failure)), { maxBackoffMs: 8_000 });
    enqueueBilling(s.outbox, ["r"]);
    s.shipper.start();
    await time.advance(20_000);
    assert.deepEqual(s.counts(), { pending: 1, sending: 0, completed: 0, failed: 0 }, "kept during the outage");
    await time.advance(MINUTE);
    // Each wait is 1..2x the last step (jitter), doubling from minBackoff, then maxBackoff; one step of slack.
    const bounds = [
      [1_000, 2_000],
      [2_000, 4_000],
      [4_000, 8_000],
      [8_000, 8_000],
      [8_000, 8_000],
      [8_000, 8_000],
    ];
    for (const [i, gap] of gaps(s.requests).entries()) {
      assert.ok(gap >= bounds[i]![0]! && gap <= bounds[i]![1]! + 1_000, `wait ${i + 1}: ${gap} ms`);
    }
    assert.deepEqual(
      s.requests.map((r) => failedSends(r)[0]),
      [0, 1, 2, 3, 4, 5, 6],
      "the delivered record counts every failed send",
    );
    assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 1, failed: 0 });
    await s.stop();
  });
}

test("after a failed send only one batch is in flight until a delivery; then the backlog goes in parallel again", async () => {
  let failing = true;
  let open = 0;
  const started: { concurrent: number }[] = [];
  const s = harness(billingPolicy("lic-key", 2), async (request) => {
    started.push({ concurrent: ++open });
    await new Promise((resolve) => setTimeout(resolve, 500)); // the beacon takes half a second
    open--;
    return failing ? { status: 503, body: "" } : inserted(request);
  });
  enqueueBilling(s.outbox, ["a", "b", "c", "d", "e", "f", "g", "h"]);
  s.shipper.start();
  await time.advance(30_000, 100);
  const first = started.slice(0, 4);
  const probes = started.slice(4);
  assert.deepEqual(
    first.map((r) => r.concurrent),
    [1, 2, 3, 4],
    "healthy: four batches at once",
  );
  assert.ok(probes.length >= 3, `${probes.length} probes`);
  assert.deepEqual(new Set(probes.map((r) => r.concurrent)), new Set([1]), "failing: one batch at a time");
  failing = false;
  const before = started.length;
  await time.advance(5 * MINUTE + 30_000, 100); // the next probe comes within maxBackoff, whatever the jitter drew
  const recovered = started.slice(before);
  assert.equal(Math.max(...recovered.map((r) => r.concurrent)), 3, "the probe's success lets the other three batches go at once");
  assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 8, failed: 0 });
  await s.stop();
});

test("a 2xx that is not the documented answer is a failed send: the records are kept and their count goes up", async () => {
  const s = harness(
    billingPolicy("lic-key", 1),
    failingFirst(() => ({ status: 200, body: { ok: true }, contentType: "application/json" })),
  );
  enqueueBilling(s.outbox, ["r"]);
  s.shipper.start();
  await time.advance(500);
  assert.deepEqual(s.counts(), { pending: 1, sending: 0, completed: 0, failed: 0 });
  assert.match(s.health.lastError!.message, /answered 200 with JSON, not the beacon's answer \{inserted_count\}/);
  await time.advance(MINUTE);
  assert.deepEqual(
    s.requests.map((r) => failedSends(r)[0]),
    [0, 1],
  );
  assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 1, failed: 0 });
  await s.stop();
});

test("stop() lets an in-flight send finish within the grace and acks it; nothing is sent after", async () => {
  const s = harness(billingPolicy("lic-key", 2), async (request) => {
    await new Promise((resolve) => setTimeout(resolve, 500));
    return inserted(request);
  });
  enqueueBilling(s.outbox, ["a", "b"]);
  s.shipper.start();
  await time.settle();
  let stoppedAt: number | undefined;
  const stopped = s.shipper.stop(1_000).then(() => (stoppedAt = time.now() - t0));
  enqueueBilling(s.outbox, ["after-stop"]);
  await time.advance(10_000, 100);
  await stopped;
  assert.ok(stoppedAt! >= 500 && stoppedAt! < 1_000, `stopped at ${stoppedAt} ms: when the answer came, before the grace ran out`);
  assert.deepEqual(
    s.requests.map((r) => r.cut),
    [false],
    "one request, answered",
  );
  assert.deepEqual(s.counts(), { pending: 1, sending: 0, completed: 2, failed: 0 }, "the batch acked; the record enqueued after stop kept");
  s.outbox.close();
});

test("stop() cuts a send still in flight after the grace: its records are pending again, no failed send counted", async () => {
  const s = harness(billingPolicy("lic-key", 1), () => new Promise<never>(() => {})); // a beacon that never answers
  enqueueBilling(s.outbox, ["r"]);
  s.shipper.start();
  await time.settle();
  let stoppedAt: number | undefined;
  const stopped = s.shipper.stop(1_000).then(() => (stoppedAt = time.now() - t0));
  await time.advance(10_000, 100);
  await stopped;
  assert.deepEqual(
    s.requests.map((r) => r.cut),
    [true],
    "the one request was aborted",
  );
  assert.ok(stoppedAt! >= 1_000 && stoppedAt! <= 1_100, `stopped at ${stoppedAt} ms: when the grace ran out`);
  assert.deepEqual(s.counts(), { pending: 1, sending: 0, completed: 0, failed: 0 });
  assert.deepEqual(
    s.outbox.peek("billing", 10).map((r) => r.attempts),
    [0],
  );
  s.outbox.close();
});

test("stop() during a Retry-After wait returns at once; the record stays pending with its failed send", async () => {
  const s = harness(billingPolicy("lic-key", 1), failingFirst(status(503, { retryAfterMs: 30 * MINUTE })));
  enqueueBilling(s.outbox, ["r"]);
  s.shipper.start();
  await time.advance(MINUTE);
  let stoppedAt: number | undefined;
  const stopped = s.shipper.stop(1_000).then(() => (stoppedAt = time.now() - t0));
  await time.advance(HOUR, 10_000);
  await stopped;
  assert.equal(stoppedAt, MINUTE);
  assert.equal(s.requests.length, 1);
  assert.deepEqual(
    s.outbox.peek("billing", 10).map((r) => r.attempts),
    [1],
  );
  s.outbox.close();
});

test("a record the shipper cannot even encode does not stop the stream: it stays pending, the error shows and recurs, stop still works", async () => {
  const s = harness(billingPolicy("lic-key", 1), inserted);
  s.outbox.enqueue("billing", [{ recordId: "corrupt", body: "{not json" }]);
  s.shipper.start();
  await time.advance(MINUTE);
  assert.match(s.health.lastError?.message ?? "", /JSON/);
  await time.advance(15 * MINUTE);
  assert.equal(s.health.lastError!.at - t0, 15 * MINUTE, "the loop is still alive: it tries again every maxBackoff, no sooner");
  assert.equal(s.requests.length, 0);
  assert.deepEqual(s.counts(), { pending: 1, sending: 0, completed: 0, failed: 0 }, "kept, not lost or marked sent");
  await s.stop();
});

/** A beacon that cannot store the records named `poison`: it answers 500 to any batch holding one, as to a DB error. */
const refusingPoison =
  (...poison: string[]): Answer =>
  (request) =>
    ids(request).some((id) => poison.includes(id))
      ? { status: 500, body: { code: "EGRESS_ERR_INTERNAL", detail: "internal error" } }
      : inserted(request);

test("a beacon that 500s every batch holding record X: everything else is delivered, X alone is dead-lettered, requests stay few", async () => {
  const s = harness(billingPolicy("lic-key", 8), refusingPoison("x", "y"));
  const all = Array.from({ length: 40 }, (_, i) => (i === 13 ? "x" : i === 14 ? "y" : `r${i}`));
  enqueueBilling(s.outbox, all);
  s.shipper.start();
  await time.advance(HOUR);
  assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 38, failed: 2 }, "billing moved on past them");
  assert.deepEqual(
    s.outbox.stats.deadLetters("billing").map((d) => d.recordId),
    ["x", "y"],
  );
  for (const dead of s.outbox.stats.deadLetters("billing")) {
    assert.match(dead.error!, /^beacon answered 500 EGRESS_ERR_INTERNAL \(alone, 3 times, while other records were delivered\)$/);
  }
  const delivered = new Set(s.requests.filter((r) => !ids(r).includes("x") && !ids(r).includes("y")).flatMap(ids));
  assert.equal(delivered.size, 38, "every other record delivered");
  assert.ok(s.requests.length <= 40, `${s.requests.length} requests in the hour`);
  const lastPoisoned = s.requests.findLast((r) => ids(r).includes("x") || ids(r).includes("y"))!;
  assert.ok(lastPoisoned.at < 5 * MINUTE, `isolated within minutes (last poisoned request at ${lastPoisoned.at} ms)`);
  assert.ok(
    s.requests.filter((r) => ids(r).length === 1 && ids(r)[0] === "x").length === 3,
    "x was sent alone exactly as often as it takes to dead-letter it",
  );
  await s.stop();
});

test("a poison record alone in the outbox is not dead-lettered on its own say-so; once other records come and get through, it is", async () => {
  const s = harness(billingPolicy("lic-key", 4), refusingPoison("x"));
  enqueueBilling(s.outbox, ["x"]);
  s.shipper.start();
  await time.advance(HOUR);
  assert.deepEqual(
    s.counts(),
    { pending: 1, sending: 0, completed: 0, failed: 0 },
    "nothing else got through: no evidence, no dead letter",
  );
  assert.ok(s.requests.length <= 20, `backoff respected: ${s.requests.length} requests in the hour`);
  enqueueBilling(s.outbox, ["a", "b", "c"]);
  await time.advance(HOUR);
  assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 3, failed: 1 });
  assert.deepEqual(
    s.outbox.stats.deadLetters("billing").map((d) => d.recordId),
    ["x"],
  );
  await s.stop();
});

for (const code of [500, 502, 504]) {
  test(`a beacon that answers ${code} to everything for an hour: nothing dead-lettered, backoff respected, all delivered after`, async () => {
    let down = true;
    const s = harness(billingPolicy("lic-key", 8), (request) => (down ? status(code)() : inserted(request)));
    enqueueBilling(
      s.outbox,
      Array.from({ length: 40 }, (_, i) => `r${i}`),
    );
    s.shipper.start();
    await time.advance(HOUR);
    assert.deepEqual(s.counts(), { pending: 40, sending: 0, completed: 0, failed: 0 }, "kept, none dead-lettered");
    const lastHalf = s.requests.filter((r) => r.at >= HOUR / 2);
    assert.ok(lastHalf.length <= 7, `one request per maxBackoff (5 min) at most once backed off: ${lastHalf.length} in the last half hour`);
    assert.ok(s.requests.length <= 30, `${s.requests.length} requests in the hour`);
    assert.ok(new Set(s.requests.map((r) => r.audit.records)).size <= 3, "the batch split at most once: whole, or halves");
    down = false;
    await time.advance(10 * MINUTE);
    assert.deepEqual(s.counts(), { pending: 0, sending: 0, completed: 40, failed: 0 });
    await s.stop();
  });
}

for (const [name, overload] of [
  ["503", status(503)],
  ["429", status(429)],
  ["500 with Retry-After", status(500, { retryAfterMs: 60_000 })],
] as const) {
  test(`${name} to every batch holding record X is overload, not poison: X is never dead-lettered`, async () => {
    const s = harness(billingPolicy("lic-key", 4), (request) => (ids(request).includes("x") ? overload() : inserted(request)));
    enqueueBilling(s.outbox, ["a", "b", "x", "c", "d", "e", "f", "g"]);
    s.shipper.start();
    await time.advance(HOUR);
    assert.equal(s.counts().failed, 0);
    assert.ok(
      s.outbox.peek("billing", 10).some((r) => r.recordId === "x"),
      "x kept, to be sent again",
    );
    await s.stop();
  });
}
