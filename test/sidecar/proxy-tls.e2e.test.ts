import assert from "node:assert/strict";
import { test } from "node:test";
import { AgentStatus } from "../../src/protocol/local-api.ts";
import { storedTransactions } from "../helpers/beacon-db.ts";
import { loopbackCertificates } from "../helpers/certificates.ts";
import { ConnectProxy } from "../helpers/connect-proxy.ts";
import { promValue } from "../helpers/telemetry.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import {
  agentConfig,
  beaconConfig,
  getJson,
  postJson,
  startAgentProcess,
  startBeacon,
  tempDir,
  waitFor,
  type ServiceProcess,
} from "../helpers/processes.ts";

const PROXY_PASSWORD = "proxy-pw-4711";
// The sidecar runs with a clean proxy environment: only what each test gives it.
const NO_PROXY_ENV = {
  HTTPS_PROXY: "",
  https_proxy: "",
  HTTP_PROXY: "",
  http_proxy: "",
  NO_PROXY: "",
  no_proxy: "",
  NODE_EXTRA_CA_CERTS: "",
};

async function httpsBeacon(t: import("node:test").TestContext) {
  const dir = tempDir();
  const certificates = await loopbackCertificates(dir);
  const license = testLicense();
  const fixture = beaconConfig([license], { tls: { certFile: certificates.certFile, keyFile: certificates.keyFile } }, dir);
  const beacon = await startBeacon(fixture);
  t.after(() => beacon.stop());
  assert.match(beacon.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  return { beacon, license, certificates, beaconData: fixture.dataDir };
}

async function deliver(agent: ServiceProcess, beaconData: string, count: number) {
  const batch = traceTransactions(count);
  assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch })).status, 202);
  await waitFor(async () => batch.every((tx) => storedTransactions(beaconData).has(tx.id)), 15_000, "delivery to the HTTPS beacon");
}

test("beacon traffic goes through HTTPS_PROXY (CONNECT, with its credentials) to an HTTPS beacon trusted by tls.caFile", async (t) => {
  const { beacon, license, certificates, beaconData } = await httpsBeacon(t);
  const proxy = await new ConnectProxy({ user: "ops", password: PROXY_PASSWORD }).start();
  t.after(() => proxy.stop());
  const fixture = agentConfig(beacon.url, { tls: { caFile: certificates.caFile } });
  const proxyUrl = proxy.url.replace("http://", `http://ops:${PROXY_PASSWORD}@`);
  const agent = await startAgentProcess(fixture, { ...NO_PROXY_ENV, PLATFORM_LICENSE_KEY: license.key, HTTPS_PROXY: proxyUrl });
  t.after(() => agent.stop());

  await deliver(agent, beaconData, 20);
  const port = new URL(beacon.url).port;
  assert.ok(proxy.tunnels.length >= 1, "the proxy saw the traffic");
  for (const tunnel of proxy.tunnels) {
    assert.equal(tunnel.target, `127.0.0.1:${port}`);
    assert.equal(tunnel.authorization, `Basic ${Buffer.from(`ops:${PROXY_PASSWORD}`).toString("base64")}`);
  }
  const status = AgentStatus.parse(await getJson(`${agent.url}/v1/status`));
  assert.equal(status.license.state, "valid");
  assert.ok(!agent.output().includes(PROXY_PASSWORD) && !agent.output().includes(license.key));
});

test("NO_PROXY keeps the beacon off the proxy", async (t) => {
  const { beacon, license, certificates, beaconData } = await httpsBeacon(t);
  const proxy = await new ConnectProxy().start();
  t.after(() => proxy.stop());
  const fixture = agentConfig(beacon.url, { tls: { caFile: certificates.caFile } });
  const agent = await startAgentProcess(fixture, {
    ...NO_PROXY_ENV,
    PLATFORM_LICENSE_KEY: license.key,
    HTTPS_PROXY: proxy.url,
    NO_PROXY: "localhost,127.0.0.1",
  });
  t.after(() => agent.stop());
  await deliver(agent, beaconData, 5);
  assert.deepEqual(proxy.tunnels, []);
});

test("an untrusted beacon certificate is refused (and said so in status) until NODE_EXTRA_CA_CERTS trusts its CA", async (t) => {
  const { beacon, license, certificates, beaconData } = await httpsBeacon(t);
  const untrusting = await startAgentProcess(agentConfig(beacon.url), { ...NO_PROXY_ENV, PLATFORM_LICENSE_KEY: license.key });
  try {
    assert.equal((await postJson(`${untrusting.url}/v1/transactions`, { trace_transactions: traceTransactions(3) })).status, 202);
    const status = await waitFor(
      async () => {
        const current = AgentStatus.parse(await getJson(`${untrusting.url}/v1/status`));
        return current.streams.billing!.lastError ? current : undefined;
      },
      10_000,
      "billing error",
    );
    assert.match(status.streams.billing!.lastError!.message, /UNABLE_TO_VERIFY_LEAF_SIGNATURE/);
    assert.equal(status.streams.billing!.completed, 0);
    assert.equal(storedTransactions(beaconData).size, 0);
    assert.ok((await promValue(untrusting.url, 'egress_beacon_requests_total{stream="billing",outcome="unreachable"}')) >= 1);
    assert.ok((await promValue(untrusting.url, 'egress_outbox_oldest_pending_age_seconds{stream="billing"}')) > 0);
  } finally {
    await untrusting.stop();
  }
  const trusting = await startAgentProcess(agentConfig(beacon.url), {
    ...NO_PROXY_ENV,
    PLATFORM_LICENSE_KEY: license.key,
    NODE_EXTRA_CA_CERTS: certificates.caFile,
  });
  t.after(() => trusting.stop());
  await deliver(trusting, beaconData, 4);
});
