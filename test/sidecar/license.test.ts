import assert from "node:assert/strict";
import { test } from "node:test";
import pino from "pino";
import { BeaconUnreachableError, type BeaconResponse, type BeaconTransport } from "../../src/sidecar/egress/beacon-client.ts";
import { OnlineLicense } from "../../src/sidecar/license/online-license.ts";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { TokenIssuer } from "../../src/beacon/token-issuer.ts";
import { ORG_ID } from "../helpers/fixtures.ts";
import { tempDir, waitFor } from "../helpers/processes.ts";

const HOUR = 3_600_000;

test("license states move valid -> grace -> unverified as the beacon stays away, and invalid when it refuses", async () => {
  let now = Date.parse("2026-11-01T00:00:00Z");
  const clock = () => now;
  const issuer = await TokenIssuer.open({ dataDir: tempDir(), signingKeyFile: "", ttlMs: HOUR, now: clock });
  const license = { id: "acme-prod", organizationId: ORG_ID, expiresAt: new Date("2099-01-01T00:00:00Z"), seats: 5 };
  // Unit test: a stand-in client whose answer the test sets.
  let answer: () => Promise<BeaconResponse> = async () => ({ status: 200, body: { token: await issuer.issue(license) } });
  let calls = 0;
  const client: BeaconTransport = {
    post: async () => {
      calls++;
      return answer();
    },
  };
  const outbox = new Outbox(tempDir(), { now: clock });
  const online = new OnlineLicense({
    client,
    licenseKey: "lic-key",
    outbox,
    intervalMs: HOUR,
    graceMs: 72 * HOUR,
    minBackoffMs: 1,
    maxBackoffMs: 5,
    logger: pino({ level: "silent" }),
    now: clock,
  });
  await online.start();
  /** Waits until the license reaches `state` after at least `n` more calls to the beacon. */
  const reach = async (state: string, n: number) => {
    const target = calls + n;
    await waitFor(() => calls >= target && online.status().state === state, 5_000, `license ${state} after ${n} more calls`);
  };
  await reach("valid", 1);
  assert.ok(online.token());

  answer = async () => {
    throw new BeaconUnreachableError("beacon unreachable: ECONNREFUSED");
  };
  now += 2 * HOUR; // the token (1 h) has expired; the last good check was 2 h ago
  online.verifySoon();
  await reach("grace", 2);
  assert.equal(online.token(), undefined);
  assert.match(online.status().lastError!, /ECONNREFUSED/);

  now += 71 * HOUR; // 73 h since the last good check
  assert.equal(online.status().state, "unverified");

  answer = async () => ({ status: 403, body: { code: "EGRESS_ERR_LICENSE_EXPIRED" } });
  await reach("invalid", 1);
  assert.match(online.status().lastError!, /EGRESS_ERR_LICENSE_EXPIRED/);
  await online.stop();
  outbox.close();
});

test("firstAttempt (when the shippers start): after the first verify answers, whatever it said; at once with a cached token", async () => {
  const issuer = await TokenIssuer.open({ dataDir: tempDir(), signingKeyFile: "", ttlMs: HOUR, now: Date.now });
  const license = { id: "acme-prod", organizationId: ORG_ID, expiresAt: new Date("2099-01-01T00:00:00Z"), seats: 5 };
  const dataDir = tempDir();
  /** A verify that never answers, until the license stops (its signal). */
  const hang: BeaconTransport["post"] = (_path, _body, { signal }) =>
    new Promise((_, reject) => signal?.addEventListener("abort", () => reject(signal.reason), { once: true }));
  const started = (answer: BeaconTransport["post"]) => {
    const online = new OnlineLicense({
      client: { post: answer },
      licenseKey: "lic-key",
      outbox: new Outbox(dataDir),
      intervalMs: HOUR,
      graceMs: 72 * HOUR,
      minBackoffMs: 1_000,
      maxBackoffMs: 5_000,
      logger: pino({ level: "silent" }),
    });
    let settled = false;
    void online.firstAttempt().then(() => (settled = true));
    return { online, settled: () => settled };
  };
  const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

  // The beacon away: settled once the attempt has failed, long before any retry.
  let fail!: (err: Error) => void;
  const away = started(() => new Promise((_, reject) => (fail = reject)));
  await away.online.start();
  await tick();
  assert.equal(away.settled(), false, "not while the verify is in flight");
  fail(new BeaconUnreachableError("beacon unreachable: ECONNREFUSED"));
  await waitFor(away.settled, 1_000, "settled after a failed attempt");
  assert.equal(away.online.token(), undefined);
  await away.online.stop();

  // The beacon answers: settled with the token in hand.
  let answer!: () => void;
  const up = started(
    () => new Promise((resolve) => (answer = () => void issuer.issue(license).then((token) => resolve({ status: 200, body: { token } })))),
  );
  await up.online.start();
  await tick();
  assert.equal(up.settled(), false);
  answer();
  await waitFor(up.settled, 1_000, "settled after the answer");
  assert.ok(up.online.token(), "the token is there when the shippers start");
  await up.online.stop();

  // The token that verify cached: settled at start, before any request.
  let requests = 0;
  const cached = started((...args) => {
    requests++;
    return hang(...args);
  });
  await cached.online.start();
  await tick();
  assert.equal(cached.settled(), true);
  assert.equal(requests, 0);
  await cached.online.stop();

  // Stopped before any answer: settled, so nothing waits on it forever.
  const stopped = started(hang);
  await stopped.online.start();
  await stopped.online.stop();
  await tick();
  assert.equal(stopped.settled(), true);
});
