import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import pino from "pino";
import { BeaconUnreachableError, type BeaconResponse, type BeaconTransport } from "../../src/sidecar/egress/beacon-client.ts";
import { OnlineLicense } from "../../src/sidecar/license/online-license.ts";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { ORG_ID } from "../helpers/fixtures.ts";
import { tempDir } from "../helpers/processes.ts";
import { HOUR, MINUTE, SimulatedTime } from "../helpers/simulated-time.ts";

// The license loop on simulated time: how many verify requests each kind of answer leads to per hour.

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
/** An unsigned token (no vendor key is configured here, so only its claims are read), capped at the license's expiry. */
function token(nowMs: number, licenseExpiresMs = Infinity): string {
  const exp = Math.floor(Math.min(nowMs + HOUR, licenseExpiresMs) / 1000);
  return `${b64({ alg: "ES256" })}.${b64({ sub: "acme-prod", org: ORG_ID, seats: 5, iat: Math.floor(nowMs / 1000), exp })}.sig`;
}

let time: SimulatedTime;
beforeEach(() => (time = SimulatedTime.start()));
afterEach(() => time.stop());

/**
 * An OnlineLicense with the shipped defaults (1 h interval, 1 s..5 min backoff), or `options` over them, against a client
 * answering `answer` at once.
 */
async function license(
  answer: (nowMs: number) => BeaconResponse | Promise<BeaconResponse>,
  options: Partial<ConstructorParameters<typeof OnlineLicense>[0]> = {},
) {
  const requests: number[] = [];
  const client: BeaconTransport = {
    post: async () => {
      requests.push(time.now());
      return answer(time.now());
    },
  };
  const outbox = new Outbox(tempDir(), { now: time.now });
  const online = new OnlineLicense({
    client,
    licenseKey: "lic-key",
    outbox,
    intervalMs: HOUR,
    graceMs: 72 * HOUR,
    minBackoffMs: 1_000,
    maxBackoffMs: 5 * MINUTE,
    logger: pino({ level: "silent" }),
    now: time.now,
    ...options,
  });
  await online.start();
  return {
    online,
    /** Requests made in [fromMs, toMs) after the start. */
    /** Minutes from the first request to each. */
    times: () => requests.map((at) => (at - requests[0]!) / MINUTE),
    between: (fromMs: number, toMs: number) => requests.filter((at) => at - requests[0]! >= fromMs && at - requests[0]! < toMs).length,
    total: () => requests.length,
    async close() {
      await online.stop();
      outbox.close();
    },
  };
}

test("a token whose license id or organization is not one (an escape sequence, free text) is refused, not shown", async () => {
  const exp = Math.floor((time.now() + HOUR) / 1000);
  const claims = [
    { sub: "acme\u001b[2J\u001b]0;owned\u0007", org: ORG_ID },
    { sub: "acme-prod", org: "lic-key echoed back" },
  ];
  for (const { sub, org } of claims) {
    const forged = `${b64({ alg: "ES256" })}.${b64({ sub, org, seats: 5, iat: exp - 3600, exp })}.sig`;
    const l = await license(() => ({ status: 200, body: { token: forged } }));
    await time.advance(MINUTE);
    const status = l.online.status();
    assert.deepEqual([status.state, status.licenseId, status.organizationId], ["unverified", null, null]);
    assert.equal(status.lastError, "the beacon's token is not a valid license token");
    await l.close();
  }
});

test("a refused license (403) is checked again once per intervals.licenseVerify, not in a loop; the state reads invalid", async () => {
  const l = await license(() => ({ status: 403, body: { code: "EGRESS_ERR_LICENSE_UNKNOWN" } }));
  await time.advance(3 * HOUR + MINUTE);
  assert.equal(l.online.status().state, "invalid");
  assert.deepEqual(l.times().map(Math.round), [0, 60, 120, 180]);
  await l.close();
});

test("a license refused after it had verified (revoked) is checked hourly from the refusal, not from the last success", async () => {
  let revoked = false;
  const l = await license((now) =>
    revoked ? { status: 403, body: { code: "EGRESS_ERR_LICENSE_UNKNOWN" } } : { status: 200, body: { token: token(now) } },
  );
  await time.advance(90 * MINUTE);
  revoked = true;
  l.online.verifySoon(); // a 401 from a shipper: the token is no longer accepted
  await time.advance(3 * HOUR + MINUTE);
  assert.equal(l.online.status().state, "invalid");
  // Verified at 0:00 and 0:55; refused at 1:30, then 2:30, 3:30, 4:30.
  assert.deepEqual(l.times().map(Math.round), [0, 55, 90, 150, 210, 270]);
  await l.close();
});

test("the last minutes before the license itself expires: one renewal, one check at expiry, then hourly checks", async () => {
  const licenseExpires = time.now() + 2 * HOUR;
  const l = await license((now) =>
    now >= licenseExpires
      ? { status: 403, body: { code: "EGRESS_ERR_LICENSE_EXPIRED" } }
      : { status: 200, body: { token: token(now, licenseExpires) } },
  );
  await time.advance(4 * HOUR);
  // Renewals 5 min before each token's expiry: 0:00 (token to 1:00), 0:55 (to 1:55), 1:50 (to 2:00, the license's
  // end), 1:55 (no later expiry), then 2:00 at expiry (403), 3:00, 4:00.
  assert.deepEqual(l.times().map(Math.round), [0, 55, 110, 115, 120, 180, 240]);
  assert.equal(l.online.status().state, "invalid");
  await l.close();
});

test("a license that verifies renews before its token expires: about one request per token lifetime", async () => {
  const l = await license((now) => ({ status: 200, body: { token: token(now) } }));
  await time.advance(6 * HOUR);
  assert.equal(l.online.status().state, "valid");
  assert.ok(l.total() >= 6 && l.total() <= 8, `${l.total()} verifications in 6 h`);
  await l.close();
});

for (const [name, answer] of [
  ["500", () => ({ status: 500, body: { detail: "boom" } })],
  ["503 with Retry-After: 0", () => ({ status: 503, body: "", retryAfterMs: 0 })],
  ["404 (a wrong beaconUrl)", () => ({ status: 404, body: "not found" })],
  ["400", () => ({ status: 400, body: { detail: "bad" } })],
  ["200 with an HTML page (a captive portal)", () => ({ status: 200, body: "<html><body>Sign in</body></html>" })],
  ["200 with a token that has expired", (now: number) => ({ status: 200, body: { token: token(now - 2 * HOUR) } })],
  [
    "an unreachable beacon",
    () => {
      throw new BeaconUnreachableError("beacon unreachable: ECONNREFUSED");
    },
  ],
] as [string, (now: number) => BeaconResponse][]) {
  test(`verification failing with ${name}: backoff doubling to retry.maxBackoff, at most ~12 requests an hour once there`, async () => {
    const l = await license(answer);
    await time.advance(3 * HOUR, 500);
    // 1 s doubling (with jitter) reaches 5 min within ~10 attempts; then one per 5 min.
    assert.ok(l.between(0, HOUR) <= 25, `${l.between(0, HOUR)} requests in the first hour`);
    assert.ok(l.between(HOUR, 3 * HOUR) <= 26, `${l.between(HOUR, 3 * HOUR)} requests in hours 2-3`);
    assert.ok(l.between(HOUR, 3 * HOUR) >= 12, "it keeps trying");
    assert.notEqual(l.online.status().state, "valid");
    assert.ok(l.online.status().lastError);
    await l.close();
  });
}

test("a 401 on every batch (verifySoon) makes at most one verification per retry.minBackoff", async () => {
  const l = await license((now) => ({ status: 200, body: { token: token(now) } }));
  await time.advance(1_000);
  for (let i = 0; i < 600; i++) {
    l.online.verifySoon();
    await time.advance(100, 100);
  }
  // 60 s of simulated 401s, ten a second: one verification per second at most.
  assert.ok(l.total() <= 62, `${l.total()} verifications`);
  await l.close();
});

test("the next verification is waited through the clock's own setTimeout, as a difference of the clock's readings", async () => {
  const waits: number[] = [];
  const l = await license((now) => ({ status: 200, body: { token: token(now) } }), {
    intervalMs: 30 * MINUTE,
    setClockTimeout: (callback, ms) => {
      waits.push(ms);
      return setTimeout(callback, ms);
    },
  });
  await time.advance(1_000);
  assert.equal(l.online.status().state, "valid");
  await l.close();
  // At once on start, then 30 minutes after that verification (the token lasts an hour: its renewal is later).
  assert.deepEqual(waits, [0, 30 * MINUTE]);
});
