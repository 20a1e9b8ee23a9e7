import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { OtlpSignal } from "../../src/protocol/otlp.ts";
import { storedTransactions } from "../helpers/beacon-db.ts";
import { FaultProxy } from "../helpers/fault-proxy.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
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
import { beaconResources, postOtlp, promValue, taggedRequest } from "../helpers/telemetry.ts";

const license = testLicense();
const SIGNALS: OtlpSignal[] = ["metrics", "traces", "logs"];
const env = { PLATFORM_LICENSE_KEY: license.key };
const quiet = { selfTelemetry: { enabled: false } };

describe("operational telemetry switches, version defaults, queue and cap", () => {
  let beacon: ServiceProcess;
  let beaconFixture: ReturnType<typeof beaconConfig>;

  before(async () => {
    beaconFixture = beaconConfig([license]);
    beacon = await startBeacon(beaconFixture);
  });
  after(async () => {
    await beacon.stop();
  });

  /** Sends all three signals tagged `marker`; each answer is a plain 200, switched off or not. */
  async function sendAll(agent: ServiceProcess, marker: string) {
    for (const signal of SIGNALS) {
      const response = await postOtlp(agent.url, signal, taggedRequest(signal, marker));
      assert.deepEqual([response.status, response.body], [200, {}], `${signal} is accepted whatever its switch`);
    }
  }

  /** Billing as a clock: once these transactions are at the beacon, telemetry sent before had its chance. */
  async function billingRoundTrip(agent: ServiceProcess) {
    const batch = traceTransactions(3);
    await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch });
    await waitFor(async () => batch.every((t) => storedTransactions(beaconFixture.dataDir).has(t.id)), 15_000, "billing delivered");
  }

  test("each switch alone: a switched-off signal is accepted, never stored or sent, and counted; the others flow", async () => {
    for (const off of SIGNALS) {
      const marker = `switch-${off}`;
      // traces is switched off the way the platform's chart does it, by env; the others in the YAML.
      const fromEnv = off === "traces";
      const fixture = agentConfig(beacon.url, { ...quiet, ...(fromEnv ? {} : { config: { telemetry: { [off]: false } } }) });
      const agent = await startAgentProcess(fixture, { ...env, ...(fromEnv ? { BEACON_TRACING_ENABLED: "false" } : {}) });
      try {
        await sendAll(agent, marker);
        if (off === "metrics") {
          // A histogram is not carried even when metrics are on (a partial success then); off, it is plain success.
          const histogram = taggedRequest("metrics", marker);
          histogram.resourceMetrics[0].scopeMetrics[0].metrics.push({ name: "latency", histogram: { dataPoints: [{ count: "1" }] } });
          const response = await postOtlp(agent.url, "metrics", histogram);
          assert.deepEqual([response.status, response.body], [200, {}], "no partialSuccess warning for a switched-off signal");
        }
        for (const on of SIGNALS.filter((s) => s !== off)) {
          await waitFor(async () => beaconResources(beaconFixture.dataDir, on, marker).length > 0, 15_000, `${on} at the beacon`);
        }
        await billingRoundTrip(agent);
        assert.deepEqual(beaconResources(beaconFixture.dataDir, off, marker), [], `${off} never reaches the beacon`);
        const status = await getJson(`${agent.url}/v1/status`);
        for (const signal of SIGNALS) assert.equal(status.streams[signal].enabled, signal !== off, `${signal} enabled in status`);
        assert.equal(
          status.streams[off].pending + status.streams[off].completed + status.streams[off].failed,
          0,
          `${off} never written to disk`,
        );
        const items = off === "metrics" ? 2 + 3 : 1;
        assert.equal(await promValue(agent.url, `egress_telemetry_dropped_items_total{signal="${off}",reason="switched_off"}`), items);
      } finally {
        await agent.stop();
      }
    }
  });

  test("version defaults: below 0.11 every signal is off unless switched on alone", async () => {
    const marker = "version-old";
    const fixture = agentConfig(beacon.url, { ...quiet, instanceVersion: "0.10.4" });
    const agent = await startAgentProcess(fixture, { ...env, BEACON_LOGGING_ENABLED: "true" });
    try {
      const status = await getJson(`${agent.url}/v1/status`);
      assert.deepEqual(
        SIGNALS.map((s) => status.streams[s].enabled),
        [false, false, true],
        "0.10: metrics and traces default off; logs on by its own switch",
      );
      await sendAll(agent, marker);
      await waitFor(async () => beaconResources(beaconFixture.dataDir, "logs", marker).length > 0, 15_000, "logs at the beacon");
      await billingRoundTrip(agent);
      assert.deepEqual(beaconResources(beaconFixture.dataDir, "metrics", marker), []);
      assert.deepEqual(beaconResources(beaconFixture.dataDir, "traces", marker), []);
    } finally {
      await agent.stop();
    }
  });

  test("privacy settings come from the sidecar's config: extra allowed keys, Error-only logs, a lower slow-span threshold", async () => {
    const marker = "privacy-config";
    const fixture = agentConfig(beacon.url, {
      ...quiet,
      privacy: { allowAttributes: { metrics: ["http.route"] }, logSeverity: "error", slowSpan: "100ms" },
    });
    const agent = await startAgentProcess(fixture, env);
    try {
      const metrics = taggedRequest("metrics", marker);
      const point = metrics.resourceMetrics[0].scopeMetrics[0].metrics[0].gauge.dataPoints[0];
      point.attributes.push(
        { key: "http.route", value: { stringValue: "/runs" } },
        { key: "http.client_ip", value: { stringValue: "10.0.0.9" } },
      );
      const traces = taggedRequest("traces", marker);
      const span = traces.resourceSpans[0].scopeSpans[0].spans[0];
      const start = BigInt(span.startTimeUnixNano);
      traces.resourceSpans[0].scopeSpans[0].spans = [
        { ...span, spanId: "00000000000000a1", status: {}, endTimeUnixNano: String(start + 200_000_000n) }, // 200 ms, OK: slow enough now
        { ...span, spanId: "00000000000000a2", status: {}, endTimeUnixNano: String(start + 50_000_000n) }, // 50 ms, OK: dropped
      ];
      const logs = taggedRequest("logs", marker);
      const record = logs.resourceLogs[0].scopeLogs[0].logRecords[0];
      logs.resourceLogs[0].scopeLogs[0].logRecords = [
        record,
        { ...record, severityNumber: 17, severityText: "Error", body: { stringValue: "pool exhausted" } },
      ];
      // A sender cannot widen the allowlist: an attribute claiming to do so is just another dropped attribute.
      logs.resourceLogs[0].resource.attributes.push({ key: "privacy.allowAttributes", value: { stringValue: "user.id" } });
      for (const [signal, body] of [
        ["metrics", metrics],
        ["traces", traces],
        ["logs", logs],
      ] as const) {
        assert.equal((await postOtlp(agent.url, signal, body)).status, 200);
      }
      const found = await waitFor(
        async () => {
          const all = SIGNALS.map((signal) => beaconResources(beaconFixture.dataDir, signal, marker));
          return all.every((r) => r.length > 0) ? all : undefined;
        },
        15_000,
        "all three signals at the beacon",
      );
      const [storedMetrics, storedTraces, storedLogs] = found as [any[], any[], any[]];
      const keys = storedMetrics[0].scopeMetrics[0].metrics[0].gauge.dataPoints[0].attributes.map((a: any) => a.key);
      assert.deepEqual(keys, ["endpoint", "method", "service_name", "http.route"], "the configured key leaves; the client IP does not");
      assert.deepEqual(
        storedTraces[0].scopeSpans[0].spans.map((s: any) => s.spanId),
        ["00000000000000a1"],
      );
      assert.deepEqual(
        storedLogs[0].scopeLogs[0].logRecords.map((r: any) => r.body.stringValue),
        ["pool exhausted"],
        "Error only",
      );
      assert.deepEqual(
        storedLogs[0].resource.attributes.map((a: any) => a.key),
        ["service.name", "env"],
      );
    } finally {
      await agent.stop();
    }
  });

  test("a signal switched off while its records are queued: they are deleted at start, never sent", async () => {
    const marker = "queued-then-off";
    const proxy = await FaultProxy.start(beacon.url);
    // Telemetry cannot get through: it queues. Verify and billing pass.
    proxy.decide = (path) => (path.includes("/v1/beacon/v1/") ? { status: 503 } : { pass: true });
    const fixture = agentConfig(proxy.url, quiet);
    try {
      const first = await startAgentProcess(fixture, env);
      await sendAll(first, marker);
      await waitFor(async () => (await getJson(`${first.url}/v1/status`)).streams.metrics.pending >= 1, 10_000, "metrics queued");
      assert.equal(await first.stop(), 0);

      proxy.decide = () => ({ pass: true });
      const second = await startAgentProcess(
        agentConfig(proxy.url, { ...quiet, config: { telemetry: { metrics: false } } }, fixture.dir),
        env,
      );
      try {
        assert.match(second.output(), /signal switched off: queued records deleted/);
        await waitFor(async () => beaconResources(beaconFixture.dataDir, "traces", marker).length > 0, 15_000, "queued traces delivered");
        await waitFor(async () => beaconResources(beaconFixture.dataDir, "logs", marker).length > 0, 15_000, "queued logs delivered");
        await billingRoundTrip(second);
        assert.deepEqual(beaconResources(beaconFixture.dataDir, "metrics", marker), [], "queued metrics were deleted, not sent");
        const metricsPosts = proxy.requests("/v1/beacon/v1/metrics");
        assert.ok(
          metricsPosts.every((r) => r.answered === 503),
          "no metrics request got through after the switch",
        );
      } finally {
        await second.stop();
      }
    } finally {
      await proxy.close();
    }
  });

  test("byte cap: over limits.telemetryMaxBytes the oldest telemetry is dropped and counted; billing loses nothing", async () => {
    const proxy = await FaultProxy.start(beacon.url);
    proxy.decide = (path) => (path.includes("/v1/beacon/v1/") ? { status: 503 } : { pass: true });
    const fixture = agentConfig(proxy.url, { ...quiet, limits: { telemetryMaxBytes: "16KiB" } });
    const agent = await startAgentProcess(fixture, env);
    const marker = "cap";
    const metricNamed = (name: string) => {
      const request = taggedRequest("metrics", marker);
      const metric = request.resourceMetrics[0].scopeMetrics[0].metrics[0];
      metric.name = name;
      metric.description = "a ".repeat(1_250); // ~3 KB per request: about five fit under the cap (words the filter keeps: one 2,500-character token would leave as <text>)
      request.resourceMetrics[0].scopeMetrics[0].metrics = [metric];
      return request;
    };
    try {
      // The first request is claimed and held in retry by the shipper; the cap applies to what waits behind it.
      // Metric names in words: a number in a name leaves as <num>, so cap_3 and cap_4 would look alike at the beacon.
      const numbers = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven"];
      await postOtlp(agent.url, "metrics", metricNamed("cap_in_flight"));
      await waitFor(async () => proxy.requests("/v1/beacon/v1/metrics").length > 0, 10_000, "first metrics send");
      const billing = traceTransactions(50);
      for (let i = 0; i < 12; i++) {
        const response = await postOtlp(agent.url, "metrics", metricNamed(`cap_${numbers[i]}`));
        assert.equal(response.status, 200);
        if (i === 6) await postJson(`${agent.url}/v1/transactions`, { trace_transactions: billing });
      }
      const overflowed = await promValue(agent.url, "egress_telemetry_overflow_dropped_records_total");
      assert.ok(overflowed >= 5, `oldest requests dropped (${overflowed})`);
      assert.ok((await promValue(agent.url, "egress_telemetry_overflow_dropped_bytes_total")) >= overflowed * 2_500);
      const queued = (await getJson(`${agent.url}/v1/status`)).streams.metrics;
      assert.ok(queued.pending <= 6, `the queue stays under the cap (${queued.pending} pending)`);

      proxy.decide = () => ({ pass: true });
      await waitFor(
        async () => beaconResources(beaconFixture.dataDir, "metrics", marker).some((r) => JSON.stringify(r).includes('"cap_eleven"')),
        15_000,
        "newest metrics delivered",
      );
      const names = beaconResources(beaconFixture.dataDir, "metrics", marker).flatMap((r: any) =>
        r.scopeMetrics.flatMap((s: any) => s.metrics.map((m: any) => m.name)),
      );
      const delivered = names.filter((n: string) => numbers.includes(n.slice(4))).map((n: string) => numbers.indexOf(n.slice(4)));
      // The drops may include the in-flight request (it waits as pending between retries): 12 or 13 in all.
      delivered.sort((a: number, b: number) => a - b);
      const newest = Array.from({ length: delivered.length }, (_, i) => 12 - delivered.length + i);
      assert.deepEqual(delivered, newest, "the newest requests survive, oldest dropped first");
      assert.ok([12, 13].includes(delivered.length + overflowed), `${delivered.length} delivered + ${overflowed} dropped`);
      await waitFor(
        async () => billing.every((t) => storedTransactions(beaconFixture.dataDir).has(t.id)),
        15_000,
        "billing delivered in full",
      );
    } finally {
      await agent.stop();
      await proxy.close();
    }
  });
});
