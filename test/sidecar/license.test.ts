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
