import assert from "node:assert/strict";
import { test } from "node:test";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { FaultProxy } from "../helpers/fault-proxy.ts";
import { storedTransactions } from "../helpers/beacon-db.ts";
import { agentConfig, beaconConfig, getJson, postJson, startAgentProcess, startBeacon, waitFor } from "../helpers/processes.ts";

test("kill -9 during intake and delivery, three times: the beacon ends with every transaction exactly once", async () => {
  const license = testLicense();
  const beaconFixture = beaconConfig([license]);
  const beacon = await startBeacon(beaconFixture);
  // Slow ingest answers keep batches in flight, so the kills land mid-send.
  const proxy = await FaultProxy.start(beacon.url);
  proxy.decide = () => ({ pass: true, delayMs: 40 });
  const fixture = agentConfig(proxy.url, { limits: { batchTransactions: 100 } });
  const batches = Array.from({ length: 40 }, () => traceTransactions(75));
  const unacknowledged = new Set(batches.keys());
  try {
    for (let round = 0; round < 3; round++) {
      const agent = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: license.key });
      // The instance posts what it has not had a 202 for; the kill comes while posts and sends are under way.
      const posting = (async () => {
        for (const i of [...unacknowledged]) {
          try {
            const response = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batches[i]! });
            if (response.status === 202) unacknowledged.delete(i);
          } catch {
            return; // the sidecar died under this request: it was not acknowledged
          }
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 150 + round * 100));
      await agent.stop("SIGKILL");
      await posting;
    }
    const agent = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: license.key });
    try {
      for (const i of [...unacknowledged]) {
        assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batches[i]! })).status, 202);
      }
      await waitFor(async () => {
        const b = (await getJson(`${agent.url}/v1/status`)).streams.billing;
        return b.pending + b.sending === 0;
      }, 30_000, "outbox drained");
    } finally {
      await agent.stop();
    }
    const stored = storedTransactions(beaconFixture.dataDir);
    const all = batches.flat();
    assert.equal(stored.size, all.length, "beacon total equals accepted total");
    for (const t of all) assert.ok(stored.has(t.id), `transaction ${t.id} reached the beacon`);
  } finally {
    await proxy.close();
    await beacon.stop();
  }
});
