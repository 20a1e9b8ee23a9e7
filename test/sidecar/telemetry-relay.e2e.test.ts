import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { SeverityNumber, SpanStatusCode, ValueType } from "@opentelemetry/api";
import { OTLPLogExporter as JsonLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { OTLPLogExporter as ProtoLogExporter } from "@opentelemetry/exporter-logs-otlp-proto";
import { OTLPMetricExporter as JsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPMetricExporter as ProtoMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import { OTLPTraceExporter as JsonTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { CompressionAlgorithm } from "@opentelemetry/otlp-exporter-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { LoggerProvider, SimpleLogRecordProcessor } from "@opentelemetry/sdk-logs";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { ProtobufMetricsSerializer } from "@opentelemetry/otlp-transformer";
import { SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { LogsRequest, MetricsRequest, TracesRequest, type KeyValue, type OtlpSignal } from "../../src/protocol/otlp.ts";
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
import { beaconResources, ManualReader, postOtlp, taggedRequest } from "../helpers/telemetry.ts";

const license = testLicense();
const env = { PLATFORM_LICENSE_KEY: license.key };

const ASSISTANT_ID = "3f2a9c1e-4b7d-4e8a-9c1f-2a3b4c5d6e7f";
const THREAD_ID = "8d3e5f0a-1b2c-4d5e-8f90-a1b2c3d4e5f6";
const JWT = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLW5vdC1yZWFs";
/** Strings the instance's telemetry carries that must never reach the beacon. */
const SECRETS = [
  "alice@example.com",
  "10.1.2.3",
  "s3cr3t-query",
  ASSISTANT_ID,
  THREAD_ID,
  JWT,
  "node-7",
  "u-123",
  "must not leave",
  "fast-ok",
];

const allowed = {
  resource: new Set(["resource.name", "env", "service.name"]),
  point: new Set(["endpoint", "method", "service_name"]),
  log: new Set(["component", "pool_size", "error_type"]),
};

function keys(attributes: KeyValue[] | undefined): string[] {
  return (attributes ?? []).map((a) => a.key);
}

/** Exporters of one encoding: OTLP/HTTP JSON, or protobuf with gzip (what most SDKs send by default). */
function exporters(agentUrl: string, encoding: "json" | "protobuf") {
  if (encoding === "json") {
    return {
      metrics: new JsonMetricExporter({ url: `${agentUrl}/v1/metrics` }),
      traces: new JsonTraceExporter({ url: `${agentUrl}/v1/traces` }),
      logs: new JsonLogExporter({ url: `${agentUrl}/v1/logs` }),
    };
  }
  const compression = CompressionAlgorithm.GZIP;
  return {
    metrics: new ProtoMetricExporter({ url: `${agentUrl}/v1/metrics`, compression }),
    traces: new ProtoTraceExporter({ url: `${agentUrl}/v1/traces`, compression }),
    logs: new ProtoLogExporter({ url: `${agentUrl}/v1/logs`, compression }),
  };
}

/** What a platform service would report through the real OTel SDK, identifiers and secrets included. */
async function reportLikeAnInstance(agentUrl: string, encoding: "json" | "protobuf") {
  const exporter = exporters(agentUrl, encoding);
  const resource = resourceFromAttributes({
    "service.name": "backend",
    env: `sdk-${encoding}`,
    "host.name": "node-7",
    "enduser.id": "u-123",
  });

  const reader = new PeriodicExportingMetricReader({ exporter: exporter.metrics, exportIntervalMillis: 60_000 });
  const meterProvider = new MeterProvider({ resource, readers: [reader] });
  const meter = meterProvider.getMeter("platform", "0.11.0");
  meter
    .createGauge("platform_http_requests_latency", { unit: "seconds", description: "request latency" })
    .record(0.25, { endpoint: `/a2a/${ASSISTANT_ID}`, method: "POST", service_name: "backend", "user.email": "alice@example.com" });
  meter
    .createCounter("platform_http_requests_failed", { unit: "1", description: "counter of failed requests", valueType: ValueType.INT })
    .add(3, { endpoint: `/threads/${THREAD_ID}/runs/42?token=s3cr3t-query`, method: "GET", service_name: "backend" });
  await meterProvider.forceFlush();
  await meterProvider.shutdown();

  const tracerProvider = new TracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor({ exporter: exporter.traces })] });
  const tracer = tracerProvider.getTracer("platform");
  const failed = tracer.startSpan(`POST /threads/${THREAD_ID}/runs`, {
    attributes: { endpoint: `/threads/${THREAD_ID}/runs`, "enduser.id": "u-123" },
  });
  failed.addEvent("exception", { "exception.message": "timeout for alice@example.com" });
  failed.setStatus({ code: SpanStatusCode.ERROR, message: "timeout for alice@example.com" });
  failed.end();
  tracer.startSpan("GET /slow", { startTime: Date.now() - 2_000 }).end();
  tracer.startSpan("GET /fast-ok").end();
  await tracerProvider.forceFlush();
  await tracerProvider.shutdown();

  const loggerProvider = new LoggerProvider({ resource, processors: [new SimpleLogRecordProcessor({ exporter: exporter.logs })] });
  const logger = loggerProvider.getLogger("platform");
  logger.emit({
    severityNumber: SeverityNumber.WARN,
    severityText: "WARN",
    body: `retry for alice@example.com from 10.1.2.3 with Bearer ${JWT} at https://api.example.com/x?token=s3cr3t-query`,
    attributes: { component: "db", pool_size: 20, "user.id": "u-123" },
  });
  logger.emit({ severityNumber: SeverityNumber.INFO, severityText: "INFO", body: "an info line that must not leave" });
  await loggerProvider.forceFlush();
  await loggerProvider.shutdown();
}

describe("operational telemetry relay", () => {
  let beacon: ServiceProcess;
  let beaconFixture: ReturnType<typeof beaconConfig>;
  let agent: ServiceProcess;

  before(async () => {
    beaconFixture = beaconConfig([license]);
    beacon = await startBeacon(beaconFixture);
    agent = await startAgentProcess(agentConfig(beacon.url, { selfTelemetry: { enabled: false } }), env);
  });
  after(async () => {
    await agent.stop();
    await beacon.stop();
  });

  for (const encoding of ["json", "protobuf"] as const) {
    test(`real OTel SDK exporters (${encoding === "json" ? "JSON" : "protobuf, gzip"}): only allowlisted, templated, scrubbed telemetry reaches the beacon`, async () => {
      await reportLikeAnInstance(agent.url, encoding);
      const marker = `sdk-${encoding}`;
      const stored = await waitFor(
        async () => {
          const found = {
            metrics: beaconResources(beaconFixture.dataDir, "metrics", marker),
            traces: beaconResources(beaconFixture.dataDir, "traces", marker),
            logs: beaconResources(beaconFixture.dataDir, "logs", marker),
          };
          return found.metrics.length && found.traces.length && found.logs.length ? found : undefined;
        },
        15_000,
        `${encoding} telemetry at the beacon`,
      );

      const text = JSON.stringify(stored);
      for (const secret of SECRETS) assert.ok(!text.includes(secret), `${secret} never leaves`);

      // What the beacon stored is in the shapes of docs/PROTOCOL.md ("OTLP JSON").
      const metrics = MetricsRequest.parse({ resourceMetrics: stored.metrics });
      const traces = TracesRequest.parse({ resourceSpans: stored.traces });
      const logs = LogsRequest.parse({ resourceLogs: stored.logs });

      const resources = [...metrics.resourceMetrics, ...traces.resourceSpans, ...logs.resourceLogs].map((r) => r.resource);
      for (const resource of resources) {
        assert.ok(
          keys(resource.attributes).every((k) => allowed.resource.has(k)),
          `resource keys ${keys(resource.attributes)}`,
        );
        assert.ok(resource.droppedAttributesCount >= 2, "host.name and enduser.id were dropped and counted");
      }

      const byName = new Map(metrics.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics)).map((m) => [m.name, m]));
      const latency = byName.get("platform_http_requests_latency")!.gauge!.dataPoints[0]!;
      assert.equal(latency.asDouble, 0.25);
      assert.deepEqual(Object.fromEntries(latency.attributes.map((a) => [a.key, a.value.stringValue])), {
        endpoint: "/a2a/{assistant_id}",
        method: "POST",
        service_name: "backend",
      });
      const failedSum = byName.get("platform_http_requests_failed")!.sum!;
      assert.deepEqual([failedSum.isMonotonic, failedSum.aggregationTemporality], [true, 2]);
      assert.equal(failedSum.dataPoints[0]!.asInt, "3");
      assert.equal(
        failedSum.dataPoints[0]!.attributes.find((a) => a.key === "endpoint")!.value.stringValue,
        "/threads/{thread_id}/runs/{run_id}",
      );

      const spans = traces.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
      assert.deepEqual(spans.map((s) => s.name).sort(), ["GET /{param}", "POST /threads/{thread_id}/runs"], "the fast OK span is dropped");
      const failed = spans.find((s) => s.status.code === 2)!;
      assert.match(failed.traceId, /^[0-9a-f]{32}$/);
      assert.deepEqual(keys(failed.attributes), ["endpoint"]);
      assert.equal(failed.droppedAttributesCount, 1);
      assert.deepEqual(keys(failed.events[0]!.attributes), [], "exception details do not leave");

      const records = logs.resourceLogs.flatMap((r) => r.scopeLogs.flatMap((s) => s.logRecords));
      assert.equal(records.length, 1, "only the warning leaves");
      assert.equal(records[0]!.severityNumber, 13);
      assert.deepEqual(keys(records[0]!.attributes).sort(), ["component", "pool_size"]);
      assert.match(records[0]!.body!.stringValue!, /^retry for <email> from <ip> with Bearer <secret> at https:\/\/<text>\/\{param\}$/);

      // Delivered telemetry is deleted from the outbox, and still counted as delivered.
      const streams = await waitFor(async () => {
        const current = (await getJson(`${agent.url}/v1/status`)).streams;
        return ["metrics", "traces", "logs"].every((s) => current[s].pending + current[s].sending === 0) ? current : undefined;
      });
      for (const signal of ["metrics", "traces", "logs"]) {
        assert.equal(streams[signal].completed, 0, `${signal} rows are deleted once delivered`);
        assert.ok(streams[signal].delivered >= 1, `${signal} deliveries counted`);
      }
    });
  }

  test("receiver: gzip JSON, int64 as numbers and upper-case ids are accepted; a bad item is rejected alone (partialSuccess)", async () => {
    const marker = "receiver-partial";
    const traces = taggedRequest("traces", marker);
    const good = traces.resourceSpans[0].scopeSpans[0].spans[0];
    good.startTimeUnixNano = Number(good.startTimeUnixNano.slice(0, -6)) * 1_000_000; // a JSON number, as the OTel JS exporter sends
    const bad = { ...good, spanId: "not-hex", name: "bad one" };
    traces.resourceSpans[0].scopeSpans[0].spans = [good, bad];
    const response = await postOtlp(agent.url, "traces", traces, { gzip: true });
    assert.equal(response.status, 200);
    assert.equal(response.body.partialSuccess.rejectedSpans, 1);
    assert.match(response.body.partialSuccess.errorMessage, /spans\.1\.spanId/);

    const histogram = taggedRequest("metrics", marker);
    histogram.resourceMetrics[0].scopeMetrics[0].metrics.push({ name: "latency_histogram", histogram: { dataPoints: [{}, {}] } });
    const partial = await postOtlp(agent.url, "metrics", histogram);
    assert.deepEqual([partial.status, partial.body.partialSuccess.rejectedDataPoints], [200, 2]);
    assert.match(partial.body.partialSuccess.errorMessage, /only gauge and sum/);

    const spans = await waitFor(
      async () => {
        const found = beaconResources(beaconFixture.dataDir, "traces", marker).flatMap((r) => r.scopeSpans[0].spans);
        return found.length > 0 ? found : undefined;
      },
      15_000,
      "the good span",
    );
    assert.deepEqual(
      spans.map((s: any) => s.spanId),
      ["eee19b7ec3c1b174"],
      "the valid span went on, ids lower-cased",
    );
    const metrics = await waitFor(
      async () => {
        const found = beaconResources(beaconFixture.dataDir, "metrics", marker);
        return found.length > 0 ? found : undefined;
      },
      15_000,
      "the valid metrics",
    );
    assert.deepEqual(
      metrics[0].scopeMetrics[0].metrics.map((m: any) => m.name),
      ["platform_http_requests_latency", "platform_http_requests_failed"],
    );
  });

  test("receiver: a protobuf request with a histogram gets a protobuf partialSuccess counting its points; the gauge goes on", async () => {
    const reader = new ManualReader();
    const provider = new MeterProvider({ resource: resourceFromAttributes({ env: "receiver-protobuf" }), readers: [reader] });
    const meter = provider.getMeter("platform");
    meter.createGauge("platform_http_requests_latency", { unit: "seconds" }).record(0.5, { endpoint: "/ok", method: "GET" });
    const histogram = meter.createHistogram("request_size");
    for (const route of ["a", "b", "c"]) histogram.record(10, { route });
    const { resourceMetrics } = await reader.collect();
    await provider.shutdown();
    const response = await fetch(`${agent.url}/v1/metrics`, {
      method: "POST",
      headers: { "content-type": "application/x-protobuf" },
      body: ProtobufMetricsSerializer.serializeRequest(resourceMetrics),
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/x-protobuf");
    // Read back the way the OTel SDK's own exporter reads it.
    const answer = ProtobufMetricsSerializer.deserializeResponse(new Uint8Array(await response.arrayBuffer()));
    assert.equal(Number(answer.partialSuccess?.rejectedDataPoints), 3);
    assert.match(answer.partialSuccess?.errorMessage ?? "", /only gauge and sum/);
    const stored = await waitFor(
      async () => {
        const found = beaconResources(beaconFixture.dataDir, "metrics", "receiver-protobuf");
        return found.length > 0 ? found : undefined;
      },
      15_000,
      "the gauge at the beacon",
    );
    assert.deepEqual(
      stored[0].scopeMetrics[0].metrics.map((m: any) => m.name),
      ["platform_http_requests_latency"],
    );
  });

  test("receiver: undecodable bodies are 400 with a Status, other media types 415, bad gzip 400; nothing is queued", async () => {
    const before = (await getJson(`${agent.url}/v1/status`)).streams;
    const post = (signal: OtlpSignal, body: Uint8Array | string, headers: Record<string, string>) =>
      fetch(`${agent.url}/v1/${signal}`, { method: "POST", headers, body });

    const json = await post("metrics", "{not json", { "content-type": "application/json" });
    assert.equal(json.status, 400);
    const status = (await json.json()) as { code: number; message: string };
    assert.equal(status.code, 3);
    assert.match(status.message, /not a valid OTLP JSON/);

    const notRequest = await post("logs", JSON.stringify({ resourceLogs: "nope" }), { "content-type": "application/json" });
    assert.equal(notRequest.status, 400);

    const proto = await post("traces", new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01]), { "content-type": "application/x-protobuf" });
    assert.equal(proto.status, 400);
    assert.equal(proto.headers.get("content-type"), "application/x-protobuf", "a protobuf request gets a protobuf Status");

    const text = await post("metrics", "hello", { "content-type": "text/plain" });
    assert.equal(text.status, 415);

    const badGzip = await post("metrics", "not gzip at all", { "content-type": "application/json", "content-encoding": "gzip" });
    assert.equal(badGzip.status, 400);

    const zipped = await post("logs", gzipSync(Buffer.from("{oops")), { "content-type": "application/json", "content-encoding": "gzip" });
    assert.equal(zipped.status, 400);

    const afterwards = (await getJson(`${agent.url}/v1/status`)).streams;
    for (const signal of ["metrics", "traces", "logs"]) {
      assert.equal(afterwards[signal].pending + afterwards[signal].completed, before[signal].pending + before[signal].completed);
    }
  });
});

describe("the sidecar's own telemetry", () => {
  test("request latency, failed requests, failed spans and warning logs reach the beacon through the same filter", async () => {
    const beaconFixture = beaconConfig([license]);
    const beacon = await startBeacon(beaconFixture);
    const proxy = await FaultProxy.start(beacon.url);
    // The first two billing sends fail: the sidecar logs a warning and counts failed requests.
    proxy.decide = (path, _body, index) => (path === "/v1/beacon/ingest-traces" && index < 2 ? { status: 500 } : { pass: true });
    const agent = await startAgentProcess(agentConfig(proxy.url, { selfTelemetry: { exportInterval: "300ms", env: "self-test" } }), env);
    try {
      const response = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(5) });
      assert.equal(response.status, 202);
      const marker = "self-test";
      const found = await waitFor(
        async () => {
          const metrics = beaconResources(beaconFixture.dataDir, "metrics", marker);
          const traces = beaconResources(beaconFixture.dataDir, "traces", marker);
          const logs = beaconResources(beaconFixture.dataDir, "logs", marker);
          const text = JSON.stringify(metrics);
          // Both failed sends counted: an export taken between them shows one (the count is cumulative).
          const failures = MetricsRequest.parse({ resourceMetrics: metrics })
            .resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
            .filter((m) => m.name === "platform_http_requests_failed")
            .flatMap((m) => m.sum!.dataPoints)
            .filter((p) => p.attributes.some((a) => a.value.stringValue === "/v1/beacon/ingest-traces"))
            .map((p) => Number(p.asInt));
          return Math.max(0, ...failures) >= 2 && text.includes("/v1/transactions") && traces.length && logs.length
            ? { metrics, traces, logs }
            : undefined;
        },
        20_000,
        "the sidecar's own telemetry at the beacon",
      );

      const metrics = MetricsRequest.parse({ resourceMetrics: found.metrics });
      const resource = metrics.resourceMetrics[0]!.resource;
      assert.deepEqual(Object.fromEntries(resource.attributes.map((a) => [a.key, a.value.stringValue])), {
        "service.name": "egress-agent",
        "resource.name": "egress-agent",
        env: "self-test",
      });
      const all = metrics.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
      const failed = all.find((m) => m.name === "platform_http_requests_failed")!;
      assert.deepEqual([failed.unit, failed.sum?.isMonotonic, failed.sum?.aggregationTemporality], ["1", true, 2]);
      // Cumulative: each export repeats the running total, so the largest is the count of failed sends.
      const beaconFailures = all
        .filter((m) => m.name === "platform_http_requests_failed")
        .flatMap((m) => m.sum!.dataPoints)
        .filter((p) => p.attributes.some((a) => a.value.stringValue === "/v1/beacon/ingest-traces"));
      assert.equal(Math.max(...beaconFailures.map((p) => Number(p.asInt))), 2, "two failed sends to the beacon");
      assert.deepEqual(beaconFailures[0]!.attributes.map((a) => a.key).sort(), ["endpoint", "method", "service_name"]);
      // Each export has its own latency gauge; an export taken before the intake was answered has none for it.
      const latencies = all.filter((m) => m.name === "platform_http_requests_latency");
      assert.ok(latencies.length > 0 && latencies.every((m) => m.unit === "seconds"));
      assert.ok(
        latencies.some((m) => m.gauge!.dataPoints.some((p) => p.attributes.some((a) => a.value.stringValue === "/v1/transactions"))),
        "served requests measured",
      );

      const spans = TracesRequest.parse({ resourceSpans: found.traces }).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
      assert.ok(
        spans.some((s) => s.name === "POST /v1/beacon/ingest-traces" && s.status.code === 2),
        "the failed sends are spans",
      );
      assert.ok(spans.every((s) => s.status.code === 2 || BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano) >= 1_000_000_000n));

      const records = LogsRequest.parse({ resourceLogs: found.logs }).resourceLogs.flatMap((r) => r.scopeLogs.flatMap((s) => s.logRecords));
      const warning = records.find((r) => r.body?.stringValue?.startsWith("stream failing"))!;
      assert.ok(warning, "the 'stream failing' warning is reported");
      assert.equal(warning.severityNumber, 13);
      assert.equal(warning.attributes.find((a) => a.key === "component")?.value.stringValue, "billing");
      assert.ok(!JSON.stringify(found).includes(license.key));
    } finally {
      assert.equal(await agent.stop(), 0);
      await proxy.close();
      await beacon.stop();
    }
  });
});
