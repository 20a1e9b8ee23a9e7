import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { storedSnapshots, storedTransactions } from "../helpers/beacon-db.ts";
import { FaultProxy } from "../helpers/fault-proxy.ts";
import { testLicense, traceTransactions, usageMeasures } from "../helpers/fixtures.ts";
import {
  agentConfig,
  beaconConfig,
  getJson,
  postJson,
  startAgentProcess,
  startBeacon,
  waitFor,
  type ServiceProcess,
} from "../helpers/processes.ts";
import { beaconResources, postOtlp, taggedRequest } from "../helpers/telemetry.ts";

const license = testLicense();
const env = { PLATFORM_LICENSE_KEY: license.key };
const fast = { intervals: { flush: "50ms", usageSnapshot: "400ms" }, selfTelemetry: { enabled: false } };

describe("usage snapshots", () => {
  let beacon: ServiceProcess;
  let beaconFixture: ReturnType<typeof beaconConfig>;

  before(async () => {
    beaconFixture = beaconConfig([license]);
    beacon = await startBeacon(beaconFixture);
  });
  after(async () => {
    await beacon.stop();
  });

  const beaconSnapshots = () => storedSnapshots(beaconFixture.dataDir);

  test("push source: validated counts, snapshots queued while the beacon is down, then delivered over contiguous windows across a restart", async () => {
    const proxy = await FaultProxy.start(beacon.url);
    proxy.decide = (path) => (path === "/v1/beacon/usage-snapshot" ? { status: 503 } : { pass: true });
    const fixture = agentConfig(proxy.url, fast);
    try {
      let agent = await startAgentProcess(fixture, env);
      const bad = await postJson(`${agent.url}/v1/usage/measures`, { ...usageMeasures(4), user_ids: ["u-1"] });
      assert.equal(bad.status, 422);
      assert.ok(
        bad.body.detail.some(
          (d: { loc: unknown[]; type: string }) => JSON.stringify(d.loc) === '["body","user_ids"]' && d.type === "extra_forbidden",
        ),
      );
      const ok = await postJson(`${agent.url}/v1/usage/measures`, usageMeasures(4));
      assert.deepEqual([ok.status, ok.body], [202, { stored: true }]);

      await waitFor(async () => (await getJson(`${agent.url}/v1/status`)).streams.usage.pending >= 2, 10_000, "snapshots queued");
      assert.deepEqual(beaconSnapshots(), [], "nothing got through while the beacon answered 503");
      proxy.decide = () => ({ pass: true });
      await waitFor(async () => beaconSnapshots().length >= 2, 10_000, "queued snapshots delivered");
      assert.equal(await agent.stop(), 0);

      agent = await startAgentProcess(fixture, env);
      const before = beaconSnapshots().length;
      await waitFor(async () => beaconSnapshots().length >= before + 2, 10_000, "snapshots after the restart");
      await agent.stop();

      const windows = beaconSnapshots().map((s) => [Date.parse(s.from_timestamp), Date.parse(s.to_timestamp)] as const);
      for (let i = 1; i < windows.length; i++) {
        assert.equal(windows[i]![0], windows[i - 1]![1], `window ${i} starts where ${i - 1} ended: no gap, no overlap`);
      }
      assert.ok(beaconSnapshots().every((s) => s.license_id === license.id && s.measures.users === 4));
      const sent = proxy.requests("/v1/beacon/usage-snapshot").map((r) => r.body);
      const utc = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
      assert.ok(
        sent.every((b) => utc.test(b.from_timestamp) && utc.test(b.to_timestamp)),
        "timestamps leave in UTC, as Z",
      );
    } finally {
      await proxy.close();
    }
  });

  for (const how of ["env", "yaml"] as const) {
    test(`usage reporting off by ${how === "env" ? "PHONE_HOME_USAGE_REPORTING_ENABLED=false" : "usageReporting: false"}: no snapshot is taken or stored; billing and telemetry continue`, async () => {
      const marker = `usage-off-${how}`;
      const fixture = agentConfig(beacon.url, { ...fast, ...(how === "yaml" ? { usageReporting: false } : { usageReporting: true }) });
      const agent = await startAgentProcess(fixture, { ...env, ...(how === "env" ? { PHONE_HOME_USAGE_REPORTING_ENABLED: "false" } : {}) });
      try {
        const before = beaconSnapshots().length;
        const pushed = await postJson(`${agent.url}/v1/usage/measures`, usageMeasures(9));
        assert.deepEqual([pushed.status, pushed.body], [202, { stored: false }]);
        const batch = traceTransactions(3);
        await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch });
        assert.equal((await postOtlp(agent.url, "logs", taggedRequest("logs", marker))).status, 200);
        await waitFor(async () => batch.every((t) => storedTransactions(beaconFixture.dataDir).has(t.id)), 10_000, "billing delivered");
        await waitFor(async () => beaconResources(beaconFixture.dataDir, "logs", marker).length > 0, 10_000, "telemetry delivered");
        // No event to await: what is tested is that no snapshot comes over two snapshot intervals (400 ms).
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        const status = await getJson(`${agent.url}/v1/status`);
        assert.deepEqual([status.streams.usage.enabled, status.streams.usage.pending, status.streams.usage.completed], [false, 0, 0]);
        assert.equal(beaconSnapshots().length, before, "no snapshot reached the beacon");
      } finally {
        await agent.stop();
      }
    });
  }
});
