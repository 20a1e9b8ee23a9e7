import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { diag, DiagLogLevel, ValueType } from "@opentelemetry/api";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import { OTLPMetricExporter as JsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPMetricExporter as ProtoMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import Database from "better-sqlite3";
import { MeterProvider, type ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { BeaconStore } from "../../src/beacon/store.ts";
import { otlpProtoTypes } from "../../src/protocol/otlp-proto-schema.ts";
import { logsRequest, testLicense } from "../helpers/fixtures.ts";
import {
  agentConfig,
  beaconConfig,
  NOWHERE,
  postJson,
  startAgentProcess,
  startBeacon,
  type BeaconFixture,
  type ServiceProcess,
} from "../helpers/processes.ts";
import { ManualReader } from "../helpers/telemetry.ts";

// OTLP/HTTP's answers (https://opentelemetry.io/docs/specs/otlp/#otlphttp-response), in JSON as in protobuf, from both
// receivers: the beacon's telemetry routes and the sidecar's. Full success is 200 without partialSuccess; an empty
// request is a full success; points the receiver does not take are a partial success (200, the rejected count and a
// message), never a refusal; an undecodable body is 400 and every error body a google.rpc.Status in the request's
// encoding (401 from the beacon's token check too).

const license = testLicense();
let fixture: BeaconFixture;
let beacon: ServiceProcess;
let agent: ServiceProcess;
let bearer: Record<string, string>;

before(async () => {
  fixture = beaconConfig([license]);
  beacon = await startBeacon(fixture);
  bearer = { authorization: `Bearer ${(await postJson(`${beacon.url}/v1/beacon/verify`, { license: license.key })).body.token}` };
  // The sidecar's beacon is elsewhere: what it relays must not land in the store this test counts.
  agent = await startAgentProcess(agentConfig(NOWHERE, { selfTelemetry: { enabled: false } }), { PLATFORM_LICENSE_KEY: license.key });
});
after(async () => {
  await agent?.stop();
  await beacon?.stop();
});

const receivers = () => [
  { name: "beacon", base: `${beacon.url}/v1/beacon/v1`, headers: bearer },
  { name: "sidecar", base: `${agent.url}/v1`, headers: {} as Record<string, string> },
];

const storedBatches = () => {
  const store = new BeaconStore(fixture.dataDir, { readonly: true });
  try {
    return store.otlpBatches().length;
  } finally {
    store.close();
  }
};

/** A gauge (taken) and a histogram of one point (not taken: only gauge and sum are carried), from the SDK. */
async function gaugeAndHistogram(): Promise<ResourceMetrics> {
  const reader = new ManualReader();
  const meters = new MeterProvider({ resource: resourceFromAttributes({ "service.name": "backend" }), readers: [reader] });
  const meter = meters.getMeter("platform");
  meter.createGauge("queue_depth", { valueType: ValueType.INT }).record(4, { endpoint: "/runs" });
  meter.createHistogram("latency").record(0.3);
  const { resourceMetrics } = await reader.collect();
  await meters.shutdown();
  return resourceMetrics;
}

/** Exports with an official exporter and returns its result and the warnings the OTel diag logger got meanwhile. */
async function exportMetrics(exporter: JsonMetricExporter | ProtoMetricExporter, metrics: ResourceMetrics) {
  const warnings: string[] = [];
  const log = (...args: unknown[]) => warnings.push(args.map(String).join(" "));
  diag.setLogger({ error: log, warn: log, info: () => {}, debug: () => {}, verbose: () => {} }, DiagLogLevel.WARN);
  try {
    const result = await new Promise<ExportResult>((resolve) => exporter.export(metrics, resolve));
    return { result, warnings };
  } finally {
    diag.disable();
    await exporter.shutdown();
  }
}

async function post(url: string, body: string | Uint8Array, headers: Record<string, string>) {
  const response = await fetch(url, { method: "POST", headers, body });
  return { status: response.status, type: response.headers.get("content-type") ?? "", bytes: Buffer.from(await response.arrayBuffer()) };
}
const JSON_TYPE = { "content-type": "application/json" };
const PROTOBUF = { "content-type": "application/x-protobuf" };
const decodeStatus = (bytes: Uint8Array) =>
  otlpProtoTypes.rpcStatus.toObject(otlpProtoTypes.rpcStatus.decode(bytes)) as { code?: number; message?: string };

describe("OTLP/HTTP answers of the beacon and the sidecar", () => {
  for (const encoding of ["json", "protobuf"] as const) {
    test(`the official ${encoding} exporter: a histogram beside a gauge is a partial success the exporter reads, not a failure`, async () => {
      for (const { name, base, headers } of receivers()) {
        const url = `${base}/metrics`;
        const exporter = encoding === "json" ? new JsonMetricExporter({ url, headers }) : new ProtoMetricExporter({ url, headers });
        const before = storedBatches();
        const { result, warnings } = await exportMetrics(exporter, await gaugeAndHistogram());
        assert.equal(result.code, ExportResultCode.SUCCESS, `${name}: ${result.error}`);
        const partial = warnings.find((w) => w.startsWith("Received Partial Success response:"));
        assert.ok(partial, `${name}: the exporter saw a partial success; warnings: ${warnings.join("; ")}`);
        const { rejectedDataPoints, errorMessage } = JSON.parse(partial.slice(partial.indexOf("{")));
        assert.equal(Number(rejectedDataPoints), 1, name);
        assert.match(errorMessage, /only gauge and sum metrics are forwarded/, name);
        if (name === "beacon") assert.equal(storedBatches(), before + 1, "the gauge is stored");
      }
    });
  }

  test("a full success is 200 without partialSuccess: {} in JSON, an empty ExportResponse in protobuf (the exporter warns of nothing)", async () => {
    for (const { name, base, headers } of receivers()) {
      const exporter = new JsonMetricExporter({ url: `${base}/metrics`, headers });
      const reader = new ManualReader();
      const meters = new MeterProvider({ readers: [reader] });
      meters.getMeter("platform").createGauge("queue_depth").record(1);
      const { result, warnings } = await exportMetrics(exporter, (await reader.collect()).resourceMetrics);
      await meters.shutdown();
      assert.deepEqual([result.code, warnings], [ExportResultCode.SUCCESS, []], name);
      // The spec: the server MUST leave partial_success unset on a full success (an empty one is not "unset").
      const raw = await post(`${base}/logs`, JSON.stringify(logsRequest()), { ...JSON_TYPE, ...headers });
      assert.deepEqual([raw.status, JSON.parse(raw.bytes.toString())], [200, {}], name);
    }
  });

  test("an empty request (no resource spans, metrics or logs) is 200 and stores nothing", async () => {
    const before = storedBatches();
    for (const { name, base, headers } of receivers()) {
      for (const [signal, body] of [
        ["traces", "{}"],
        ["traces", '{"resourceSpans":[]}'],
        ["metrics", '{"resourceMetrics":[{"scopeMetrics":[]}]}'],
        ["logs", '{"resourceLogs":[{"scopeLogs":[{"logRecords":[]}]}]}'],
      ] as const) {
        const answer = await post(`${base}/${signal}`, body, { ...JSON_TYPE, ...headers });
        assert.deepEqual([answer.status, JSON.parse(answer.bytes.toString())], [200, {}], `${name} ${body}`);
      }
      const empty = await post(`${base}/traces`, ProtobufTraceSerializer.serializeRequest([])!, { ...PROTOBUF, ...headers });
      assert.deepEqual([empty.status, empty.type, empty.bytes.length], [200, "application/x-protobuf", 0], `${name}: protobuf`);
    }
    assert.equal(storedBatches(), before);
  });

  test("an undecodable body is 400 with a google.rpc.Status (INVALID_ARGUMENT) in the request's encoding", async () => {
    for (const { name, base, headers } of receivers()) {
      for (const body of ['{"resourceSpans": [', "", "[1, 2]", '{"resourceSpans": {}}']) {
        const answer = await post(`${base}/traces`, body, { ...JSON_TYPE, ...headers });
        assert.equal(answer.status, 400, `${name} ${JSON.stringify(body)}`);
        assert.match(answer.type, /^application\/json/);
        const status = JSON.parse(answer.bytes.toString());
        assert.deepEqual([status.code, typeof status.message], [3, "string"], `${name}: ${answer.bytes}`);
      }
      const garbage = await post(`${base}/traces`, new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0x0f]), { ...PROTOBUF, ...headers });
      assert.deepEqual([garbage.status, garbage.type], [400, "application/x-protobuf"], name);
      assert.equal(decodeStatus(garbage.bytes).code, 3, name);
    }
  });

  test("the beacon without a token: 401 with a google.rpc.Status (UNAUTHENTICATED), which the official exporter gets as a failure", async () => {
    const { result } = await exportMetrics(
      new JsonMetricExporter({ url: `${beacon.url}/v1/beacon/v1/metrics` }),
      await gaugeAndHistogram(),
    );
    assert.equal(result.code, ExportResultCode.FAILED);
    const error = result.error as Error & { code?: number; data?: string };
    assert.equal(error.code, 401);
    const status = JSON.parse(error.data!);
    assert.equal(status.code, 16);
    assert.match(status.message, /needs 'Authorization: Bearer <token>'/);
    const protobuf = await post(`${beacon.url}/v1/beacon/v1/traces`, ProtobufTraceSerializer.serializeRequest([])!, PROTOBUF);
    assert.deepEqual([protobuf.status, protobuf.type], [401, "application/x-protobuf"]);
    assert.equal(decodeStatus(protobuf.bytes).code, 16);
  });
});

describe("what the beacon stores of an OTLP JSON request", () => {
  /** The newest stored batch's body as SQLite holds it: its type and its bytes (read as text, bad bytes would hide). */
  const newestBody = () => {
    const db = new Database(join(fixture.dataDir, "beacon.db"), { readonly: true });
    try {
      const row = db
        .prepare("SELECT typeof(body) AS type, CAST(body AS BLOB) AS bytes FROM otlp_batches ORDER BY seq DESC LIMIT 1")
        .get() as {
        type: string;
        bytes: Buffer;
      };
      return { type: row.type, body: row.bytes.toString("hex") };
    } finally {
      db.close();
    }
  };
  /** A logs request in the form the beacon's parsing leaves as it is (every field present, as the sidecar sends). */
  const withLogBody = (text: string) => {
    const request = logsRequest();
    const [resourceLogs] = request.resourceLogs;
    Object.assign(resourceLogs!.resource, { droppedAttributesCount: 0 });
    resourceLogs!.scopeLogs[0]!.scope = { name: "", version: "", attributes: [], droppedAttributesCount: 0 };
    resourceLogs!.scopeLogs[0]!.logRecords[0]!.body = { stringValue: text };
    return JSON.stringify(request);
  };

  test("a request it takes as it is is stored as its text, byte for byte, non-ASCII included", async () => {
    const body = withLogBody("Grüße, 東京 😀");
    const answer = await post(`${beacon.url}/v1/beacon/v1/logs`, body, { ...JSON_TYPE, ...bearer });
    assert.equal(answer.status, 200);
    assert.deepEqual(newestBody(), { type: "text", body: Buffer.from(body).toString("hex") });
  });

  test("a body that is not valid UTF-8 is stored as the text it decodes to (U+FFFD), never as invalid text", async () => {
    const [head, tail] = withLogBody("bad byte here").split("bad byte here") as [string, string];
    const body = Buffer.concat([Buffer.from(`${head}bad `), Buffer.from([0xff]), Buffer.from(` here${tail}`)]);
    const answer = await post(`${beacon.url}/v1/beacon/v1/logs`, body, { ...JSON_TYPE, ...bearer });
    assert.equal(answer.status, 200);
    assert.deepEqual(newestBody(), { type: "text", body: Buffer.from(`${head}bad \ufffd here${tail}`).toString("hex") });
  });
});
