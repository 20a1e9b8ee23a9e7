import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { after, before, test } from "node:test";
import { ValueType } from "@opentelemetry/api";
import { ExportResultCode } from "@opentelemetry/core";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import {
  JsonLogsSerializer,
  JsonMetricsSerializer,
  JsonTraceSerializer,
  ProtobufLogsSerializer,
  ProtobufMetricsSerializer,
  ProtobufTraceSerializer,
} from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from "@opentelemetry/sdk-logs";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { BeaconStore } from "../../src/beacon/store.ts";
import type { OtlpSignal } from "../../src/protocol/otlp.ts";
import { testLicense } from "../helpers/fixtures.ts";
import { beaconConfig, postJson, startBeacon, type BeaconFixture, type ServiceProcess } from "../helpers/processes.ts";
import { ManualReader } from "../helpers/telemetry.ts";

// The beacon's telemetry routes take OTLP/HTTP protobuf as well as JSON (a customer's OpenTelemetry Collector or
// Fluent Bit sends protobuf, gzip-compressed, by default), and store the same either way.

const license = testLicense();
const resource = resourceFromAttributes({ "service.name": "platform-backend", "host.cpus": 8, tags: ["a", "b"] });
let fixture: BeaconFixture;
let beacon: ServiceProcess;
let bearer: string;

before(async () => {
  fixture = beaconConfig([license]);
  beacon = await startBeacon(fixture);
  bearer = `Bearer ${(await postJson(`${beacon.url}/v1/beacon/verify`, { license: license.key })).body.token}`;
});
after(() => beacon.stop());

function stored(signal: OtlpSignal): unknown[] {
  const store = new BeaconStore(fixture.dataDir, { readonly: true });
  try {
    return store.otlpBatches(signal).map((batch) => batch.body);
  } finally {
    store.close();
  }
}

async function telemetry() {
  const reader = new ManualReader();
  const meters = new MeterProvider({ resource, readers: [reader] });
  meters.getMeter("billing", "1.2.0").createCounter("requests", { valueType: ValueType.INT }).add(3, { "http.route": "/pay" });
  meters.getMeter("billing").createGauge("queue.depth").record(0.5);
  const { resourceMetrics } = await reader.collect();
  await meters.shutdown();

  const spans = new InMemorySpanExporter();
  const tracer = new TracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] }).getTracer("api");
  tracer.startSpan("POST /pay", { attributes: { "http.status_code": 200 } }).end();

  const logs = new InMemoryLogRecordExporter();
  new LoggerProvider({ resource, processors: [new SimpleLogRecordProcessor({ exporter: logs })] })
    .getLogger("api")
    .emit({ severityNumber: 13, body: "slow request", attributes: { route: "/pay" } });

  assert.equal(spans.getFinishedSpans().length, 1);
  assert.equal(logs.getFinishedLogRecords().length, 1);
  return {
    metrics: [ProtobufMetricsSerializer.serializeRequest(resourceMetrics)!, JsonMetricsSerializer.serializeRequest(resourceMetrics)!],
    traces: [
      ProtobufTraceSerializer.serializeRequest(spans.getFinishedSpans())!,
      JsonTraceSerializer.serializeRequest(spans.getFinishedSpans())!,
    ],
    logs: [
      ProtobufLogsSerializer.serializeRequest(logs.getFinishedLogRecords())!,
      JsonLogsSerializer.serializeRequest(logs.getFinishedLogRecords())!,
    ],
  } satisfies Record<OtlpSignal, [Uint8Array, Uint8Array]>;
}

const responseOf = {
  metrics: ProtobufMetricsSerializer,
  traces: ProtobufTraceSerializer,
  logs: ProtobufLogsSerializer,
};

test("each signal: the same telemetry as gzip'd protobuf and as JSON is stored alike; protobuf is answered in protobuf", async () => {
  const bodies = await telemetry();
  for (const signal of ["metrics", "traces", "logs"] as const) {
    const [protobuf, json] = bodies[signal];
    const url = `${beacon.url}/v1/beacon/v1/${signal}`;
    const fromJson = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: bearer },
      body: json,
    });
    assert.equal(fromJson.status, 200, await fromJson.text());
    const fromProtobuf = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-protobuf", "content-encoding": "gzip", authorization: bearer },
      body: gzipSync(protobuf),
    });
    assert.equal(fromProtobuf.status, 200);
    assert.equal(fromProtobuf.headers.get("content-type"), "application/x-protobuf");
    assert.deepEqual(responseOf[signal].deserializeResponse(new Uint8Array(await fromProtobuf.arrayBuffer())), {});
    const [first, second] = stored(signal).slice(-2);
    assert.ok(first, `${signal}: stored`);
    assert.match(JSON.stringify(first), /platform-backend/, `${signal}: the telemetry itself, not an empty request`);
    assert.deepEqual(second, first, `${signal}: the protobuf request is stored as the JSON one was`);
  }
});

test("a protobuf request without the token is refused before its body is read: 401 as a google.rpc.Status", async () => {
  const [protobuf] = (await telemetry()).metrics;
  const before = stored("metrics").length;
  const answer = await fetch(`${beacon.url}/v1/beacon/v1/metrics`, {
    method: "POST",
    headers: { "content-type": "application/x-protobuf" },
    body: protobuf,
  });
  assert.equal(answer.status, 401);
  assert.equal(answer.headers.get("content-type"), "application/x-protobuf");
  assert.equal(stored("metrics").length, before);
});

test("the OpenTelemetry SDK's own OTLP/HTTP protobuf exporter, gzip on, exports to the beacon", async () => {
  const exporter = new OTLPMetricExporter({
    url: `${beacon.url}/v1/beacon/v1/metrics`,
    headers: { authorization: bearer },
    compression: "gzip" as never,
  });
  const reader = new ManualReader();
  const meters = new MeterProvider({ resource: resourceFromAttributes({ "service.name": "collector-like" }), readers: [reader] });
  meters.getMeter("forwarder").createCounter("forwarded").add(42);
  const { resourceMetrics } = await reader.collect();
  const result = await new Promise<{ code: ExportResultCode; error?: Error }>((resolve) => exporter.export(resourceMetrics, resolve));
  assert.equal(result.code, ExportResultCode.SUCCESS, String(result.error));
  await exporter.shutdown();
  await meters.shutdown();
  const last = stored("metrics").at(-1) as { resourceMetrics: { resource: { attributes: { key: string; value: unknown }[] } }[] };
  assert.deepEqual(last.resourceMetrics[0]!.resource.attributes, [{ key: "service.name", value: { stringValue: "collector-like" } }]);
});
