import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { FaultProxy } from "../helpers/fault-proxy.ts";
import { storedTransactions } from "../helpers/beacon-db.ts";
import { promValue } from "../helpers/telemetry.ts";
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

const license = testLicense();

async function billingStatus(agent: ServiceProcess) {
  return (await getJson(`${agent.url}/v1/status`)).streams.billing;
}

function delivered(agent: ServiceProcess, n: number) {
  return waitFor(
    async () => {
      const s = await billingStatus(agent);
      return s.completed === n && s.pending === 0 && s.sending === 0 ? s : undefined;
    },
    20_000,
    `${n} delivered`,
  );
}

describe("sidecar billing delivery", () => {
  let beacon: ServiceProcess;
  let beaconFixture: ReturnType<typeof beaconConfig>;
  const outputs: string[] = [];

  before(async () => {
    beaconFixture = beaconConfig([license]);
    beacon = await startBeacon(beaconFixture);
  });
  after(async () => {
    await beacon.stop();
    for (const output of [...outputs, beacon.output()])
      assert.ok(!output.includes(license.key), "the license key never appears in any log");
  });

  test("happy path: accepted transactions reach the beacon once, with a verified license", async () => {
    const agent = await startAgentProcess(agentConfig(beacon.url), { PLATFORM_LICENSE_KEY: license.key });
    try {
      const batch = traceTransactions(120);
      const first = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch });
      assert.deepEqual([first.status, first.body], [202, { accepted: 120, duplicates: 0 }]);
      const again = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch.slice(0, 20) });
      assert.deepEqual([again.status, again.body], [202, { accepted: 20, duplicates: 20 }]);
      await delivered(agent, 120);
      const stored = storedTransactions(beaconFixture.dataDir);
      for (const t of batch) assert.equal(stored.get(t.id), 0, "delivered first time, so no failed attempts");
      const status = await getJson(`${agent.url}/v1/status`);
      assert.equal(status.license.state, "valid");
      assert.equal(status.license.licenseId, license.id);
      assert.ok(!JSON.stringify(status).includes(license.key), "status never shows the key");
      assert.equal(await agent.stop("SIGTERM"), 0);
    } finally {
      outputs.push(agent.output());
      await agent.stop("SIGKILL");
    }
  });

  test("a bad batch is 422 with the field path, and nothing of it is kept", async () => {
    const agent = await startAgentProcess(agentConfig(beacon.url), { PLATFORM_LICENSE_KEY: license.key });
    try {
      const batch: Record<string, unknown>[] = traceTransactions(4);
      batch[2] = { ...batch[2], session_id: "session-7" };
      const response = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch });
      assert.equal(response.status, 422);
      assert.deepEqual(response.body.detail[0].loc, ["body", "trace_transactions", 2, "session_id"]);
      const empty = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: [] });
      assert.equal(empty.status, 422);
      const s = await billingStatus(agent);
      assert.equal(s.pending + s.sending + s.completed + s.failed, 0);
    } finally {
      outputs.push(agent.output());
      await agent.stop();
    }
  });

  test("beacon down at start, then up: everything is delivered, with the failed attempts counted, and the log says so twice", async () => {
    const beaconAddress = await FaultProxy.refusing();
    const agent = await startAgentProcess(agentConfig(beaconAddress.url), { PLATFORM_LICENSE_KEY: license.key });
    const laterBeacon = beaconConfig([license]);
    let upBeacon: ServiceProcess | undefined;
    try {
      const batch = traceTransactions(60);
      assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch })).status, 202);
      const failing = await waitFor(async () => {
        const s = await getJson(`${agent.url}/v1/status`);
        return s.streams.billing.lastError && s.streams.billing.pending === 60 ? s : undefined;
      });
      assert.equal(failing.license.state, "unverified");
      assert.match(failing.streams.billing.lastError.message, /unreachable/);
      const failedSends = () => promValue(agent.url, 'egress_beacon_requests_total{stream="billing",outcome="unreachable"}');
      await waitFor(async () => (await failedSends()) >= 4, 15_000, "a few more failed rounds");

      upBeacon = await startBeacon(laterBeacon);
      beaconAddress.forwardTo(upBeacon.url);
      await delivered(agent, 60);
      const stored = storedTransactions(laterBeacon.dataDir);
      assert.equal(stored.size, 60);
      for (const t of batch) assert.ok(stored.get(t.id)! >= 1, "num_failed_send_attempts travels with the record");
      await waitFor(async () => (await getJson(`${agent.url}/v1/status`)).license.state === "valid", 15_000, "license valid");
      const log = agent.output();
      assert.equal(log.match(/"stream failing"/g)?.length, 1, "one warning when the stream starts failing");
      assert.equal(log.match(/"stream recovered"/g)?.length, 1, "one line when it recovers");
    } finally {
      outputs.push(agent.output());
      await agent.stop();
      await upBeacon?.stop();
      await beaconAddress.close();
    }
  });

  test("500, 503 and 429 with Retry-After are retried, Retry-After is honoured, and nothing is counted twice", async () => {
    const proxy = await FaultProxy.start(beacon.url);
    const faults = [{ status: 500 }, { status: 503 }, { status: 429, headers: { "retry-after": "1" } }];
    proxy.decide = (path, _body, index) => (path === "/v1/beacon/ingest-traces" && index < faults.length ? faults[index]! : { pass: true });
    const agent = await startAgentProcess(agentConfig(proxy.url), { PLATFORM_LICENSE_KEY: license.key });
    try {
      const batch = traceTransactions(30);
      await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch });
      await delivered(agent, 30);
      const ingests = proxy.requests("/v1/beacon/ingest-traces");
      assert.deepEqual(
        ingests.map((r) => r.answered),
        [500, 503, 429, 200],
      );
      assert.deepEqual(
        ingests.map((r) => r.body.trace_transactions[0].num_failed_send_attempts),
        [0, 1, 2, 3],
        "each failed send is counted in the next payload",
      );
      assert.ok(ingests[3]!.at - ingests[2]!.at >= 950, `waited ${ingests[3]!.at - ingests[2]!.at} ms after Retry-After: 1`);
      const stored = storedTransactions(beaconFixture.dataDir);
      for (const t of batch) assert.equal(stored.get(t.id), 3);
    } finally {
      outputs.push(agent.output());
      await agent.stop();
      await proxy.close();
    }
  });

  test("401 on ingest: the sidecar verifies the license again, then delivers with the new token", async () => {
    const proxy = await FaultProxy.start(beacon.url);
    proxy.decide = (path, _body, index) =>
      path === "/v1/beacon/ingest-traces" && index === 0
        ? { status: 401, body: { detail: "token expired", code: "EGRESS_ERR_TOKEN_INVALID" } }
        : { pass: true };
    const agent = await startAgentProcess(agentConfig(proxy.url), { PLATFORM_LICENSE_KEY: license.key });
    try {
      await waitFor(async () => (await getJson(`${agent.url}/v1/status`)).license.state === "valid", 10_000, "license valid");
      const batch = traceTransactions(10);
      await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch });
      await delivered(agent, 10);
      const ingests = proxy.requests("/v1/beacon/ingest-traces");
      assert.deepEqual(
        ingests.map((r) => r.answered),
        [401, 200],
      );
      const verifies = proxy.requests("/v1/beacon/verify");
      assert.equal(verifies.length, 2, "one verification at start, one after the 401");
      assert.ok(verifies[1]!.at >= ingests[0]!.at);
      assert.equal(storedTransactions(beaconFixture.dataDir).get(batch[0]!.id), 1, "the 401 counts as a failed send");
    } finally {
      outputs.push(agent.output());
      await agent.stop();
      await proxy.close();
    }
  });

  test("a poisoned record among good ones: the good are delivered, the bad one is kept as failed and shown", async () => {
    const proxy = await FaultProxy.start(beacon.url);
    const batch = traceTransactions(40);
    const poisoned = batch[17]!.id;
    proxy.decide = (path, body) =>
      path === "/v1/beacon/ingest-traces" && body.trace_transactions.some((t: { id: string }) => t.id === poisoned)
        ? {
            status: 422,
            body: { detail: [{ loc: ["body", "trace_transactions", 0, "tenant_id"], msg: "tenant unknown", type: "custom" }] },
          }
        : { pass: true };
    const agent = await startAgentProcess(agentConfig(proxy.url), { PLATFORM_LICENSE_KEY: license.key });
    try {
      await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch });
      const s = await waitFor(async () => {
        const b = await billingStatus(agent);
        return b.completed === 39 && b.failed === 1 && b.pending === 0 ? b : undefined;
      });
      assert.equal(s.deadLetters[0].recordId, poisoned);
      // The field and the problem's type; never the beacon's free text (src/remote-answer.ts).
      assert.equal(s.deadLetters[0].error, "beacon answered 422: body.trace_transactions.0.tenant_id custom");
      const stored = storedTransactions(beaconFixture.dataDir);
      assert.ok(!stored.has(poisoned));
      assert.equal(batch.filter((t) => stored.has(t.id)).length, 39);
    } finally {
      outputs.push(agent.output());
      await agent.stop();
      await proxy.close();
    }
  });

  test("an unknown license: the state says invalid, and billing data is still accepted and kept", async () => {
    const agent = await startAgentProcess(agentConfig(beacon.url), { PLATFORM_LICENSE_KEY: "lic-not-known-to-the-beacon" });
    try {
      const response = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(5) });
      assert.equal(response.status, 202);
      const status = await waitFor(async () => {
        const s = await getJson(`${agent.url}/v1/status`);
        return s.license.state === "invalid" && s.streams.billing.lastError ? s : undefined;
      });
      assert.match(status.license.lastError, /EGRESS_ERR_LICENSE_UNKNOWN/);
      assert.match(status.streams.billing.lastError.message, /403/);
      assert.equal(status.streams.billing.pending + status.streams.billing.sending, 5);
      assert.equal((await fetch(`${agent.url}/readyz`)).status, 200, "license state does not take the sidecar down");
      assert.equal(await agent.stop("SIGTERM"), 0, "SIGTERM during backoff still exits 0");
    } finally {
      outputs.push(agent.output());
      await agent.stop("SIGKILL");
    }
  });
});

test("the license is verified again every intervals.licenseVerify", async () => {
  const license = testLicense();
  const beacon = await startBeacon(beaconConfig([license]));
  const proxy = await FaultProxy.start(beacon.url);
  const agent = await startAgentProcess(agentConfig(proxy.url, { intervals: { licenseVerify: "300ms", flush: "50ms" } }), {
    PLATFORM_LICENSE_KEY: license.key,
  });
  try {
    await waitFor(async () => proxy.requests("/v1/beacon/verify").length >= 4, 10_000, "four verifications");
    const times = proxy.requests("/v1/beacon/verify").map((r) => r.at);
    for (let i = 1; i < times.length; i++) assert.ok(times[i]! - times[i - 1]! >= 250, "not more often than the interval");
  } finally {
    await agent.stop();
    await proxy.close();
    await beacon.stop();
  }
});

test("SIGTERM during a hanging send: exit 0 within 10 s, and the batch is delivered after restart", async () => {
  const license = testLicense();
  const beaconFixture = beaconConfig([license]);
  const beacon = await startBeacon(beaconFixture);
  const proxy = await FaultProxy.start(beacon.url);
  proxy.decide = (path) => (path === "/v1/beacon/ingest-traces" ? { pass: true, delayMs: 30_000 } : { pass: true });
  const fixture = agentConfig(proxy.url);
  const batch = traceTransactions(25);
  try {
    const agent = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: license.key });
    await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch });
    await waitFor(async () => proxy.requests("/v1/beacon/ingest-traces").length > 0, 10_000, "a send in flight");
    const stopping = Date.now();
    assert.equal(await agent.stop("SIGTERM"), 0);
    const took = Date.now() - stopping;
    assert.ok(took < 10_000, `stopped in ${took} ms`);

    proxy.decide = () => ({ pass: true });
    const again = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: license.key });
    try {
      await waitFor(
        async () => (await getJson(`${again.url}/v1/status`)).streams.billing.completed === 25,
        15_000,
        "delivered after restart",
      );
    } finally {
      await again.stop();
    }
    assert.equal(storedTransactions(beaconFixture.dataDir).size, 25);
  } finally {
    await proxy.close();
    await beacon.stop();
  }
});
