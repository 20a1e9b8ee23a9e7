import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { OtlpSignal } from "../../src/protocol/otlp.ts";
import { ORG_ID, testLicense } from "../helpers/fixtures.ts";
import { type CollectorMode, TestCollector } from "../helpers/otlp-collector.ts";
import {
  agentConfig,
  beaconConfig,
  startAgentProcess,
  startBeacon,
  waitFor,
  type BeaconFixture,
  type ServiceProcess,
} from "../helpers/processes.ts";
import { postOtlp, promValue, taggedRequest } from "../helpers/telemetry.ts";

// A vendor's setup: a real sidecar relays an instance's telemetry to a real beacon, which forwards it to the
// vendor's own OTLP collector (a loopback HTTP server here, standing where the vendor's collector would be).

const license = testLicense();
const COLLECTOR_KEY = "collector-api-key-0b9e2f";
const SIGNALS: OtlpSignal[] = ["metrics", "traces", "logs"];
let collector: TestCollector;
let fixture: BeaconFixture;
let beacon: ServiceProcess;
let agent: ServiceProcess;

before(async () => {
  collector = await TestCollector.start();
  fixture = beaconConfig([license], {
    telemetry: {
      forward: {
        endpoint: `${collector.url}/`,
        headers: { "x-api-key": COLLECTOR_KEY },
        metrics: ["platform_http_requests_latency"],
        retry: { minBackoff: "50ms", maxBackoff: "300ms" },
      },
    },
  });
  beacon = await startBeacon(fixture);
  agent = await startAgentProcess(agentConfig(beacon.url), { PLATFORM_LICENSE_KEY: license.key });
});

after(async () => {
  await agent?.stop();
  await beacon?.stop();
  await collector?.down();
});

const backlog = () => promValue(beacon.url, "egress_beacon_forward_backlog_batches");

/** Sends one batch of each signal through the sidecar, tagged `marker`. */
async function relay(marker: string): Promise<void> {
  for (const signal of SIGNALS) assert.equal((await postOtlp(agent.url, signal, taggedRequest(signal, marker))).status, 200);
}

/** Waits until the collector has taken `marker`'s batch of every signal; returns them by signal. */
function arrived(marker: string) {
  return waitFor(() => SIGNALS.every((s) => collector.resources(s, marker).length > 0), 20_000, `${marker} at the collector`);
}

test("the collector gets the sidecar's traces, logs and allowed metrics, marked with the license and organization, never the key", async () => {
  await relay("first");
  await arrived("first");
  const [metrics] = collector.resources("metrics", "first");
  const names = metrics.scopeMetrics.flatMap((s: any) => s.metrics.map((m: any) => m.name));
  assert.deepEqual(names, ["platform_http_requests_latency"], "platform_http_requests_failed is not in telemetry.forward.metrics");
  for (const signal of SIGNALS) {
    const [entry] = collector.resources(signal, "first");
    const attributes = Object.fromEntries(entry.resource.attributes.map((a: any) => [a.key, a.value.stringValue]));
    assert.equal(attributes["license.id"], license.id);
    assert.equal(attributes["organization.id"], ORG_ID);
  }
  for (const arrival of collector.arrivals) {
    assert.equal(arrival.headers["x-api-key"], COLLECTOR_KEY);
    assert.equal(arrival.headers["content-type"], "application/json");
    assert.ok(!arrival.raw.includes(license.key), "the license key is never forwarded");
  }
  assert.equal(await waitFor(async () => (await backlog()) === 0 || undefined), true);
  assert.ok((await promValue(beacon.url, 'egress_beacon_forward_batches_total{signal="traces"}')) >= 1);
  assert.ok((await promValue(beacon.url, "egress_beacon_forward_filtered_data_points_total")) >= 1);
  assert.ok(!beacon.output().includes(COLLECTOR_KEY), "the header's value is never logged");
  assert.ok(!beacon.output().includes(license.key));
});

// Each with its marker: a word the sidecar's privacy filter leaves as it is.
const outages: { name: string; marker: string; mode: CollectorMode | "down" }[] = [
  { name: "down (connection refused)", marker: "refused", mode: "down" },
  { name: "answering 500", marker: "failure", mode: "500" },
  { name: "answering 429 with Retry-After: 1", marker: "busy", mode: "429" },
  { name: "answering 200 with an HTML login page", marker: "second", mode: "html" },
];

for (const { name, marker, mode } of outages) {
  test(`a collector ${name}: the backlog grows on /metrics, then drains when it is back, nothing lost or doubled`, async () => {
    if (mode === "down") await collector.down();
    else collector.mode = mode;
    const tried = collector.requests;
    await relay(marker);
    await waitFor(async () => (await backlog()) >= 3 || undefined, 15_000, "a backlog of 3");
    if (mode !== "down") await waitFor(() => collector.requests > tried + 2, 15_000, "retries");
    assert.ok((await promValue(beacon.url, "egress_beacon_forward_backlog_bytes")) > 0);
    assert.deepEqual(
      SIGNALS.map((s) => collector.resources(s, marker).length),
      [0, 0, 0],
    );
    if (mode === "down") await collector.up();
    else collector.mode = "ok";
    await arrived(marker);
    await waitFor(async () => (await backlog()) === 0 || undefined, 15_000, "an empty backlog");
    assert.deepEqual(
      SIGNALS.map((s) => collector.resources(s, marker).length),
      [1, 1, 1],
      "each batch once",
    );
  });
}

test("a beacon restarted with a backlog forwards it after the restart: the queue is in its database", async () => {
  await collector.down();
  await relay("restart");
  await waitFor(async () => (await backlog()) >= 3 || undefined, 15_000, "a backlog of 3");
  assert.equal(await beacon.stop(), 0);
  await collector.up();
  beacon = await startBeacon(fixture);
  await arrived("restart");
  await waitFor(async () => (await backlog()) === 0 || undefined, 15_000, "an empty backlog");
  assert.deepEqual(
    SIGNALS.map((s) => collector.resources(s, "restart").length),
    [1, 1, 1],
  );
});
