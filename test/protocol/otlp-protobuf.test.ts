import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ROOT_CONTEXT, SeverityNumber, SpanKind, SpanStatusCode, ValueType, createTraceState, trace } from "@opentelemetry/api";
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
import { ManualReader } from "../helpers/telemetry.ts";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import protobuf from "protobufjs";
import { otlpSignals, type LogsRequest, type MetricsRequest, type OtlpSignal, type TracesRequest } from "../../src/protocol/otlp.ts";
import { HttpError } from "../../src/errors.ts";
import { OtlpDecodeError, decodeOtlpProtobuf, encodeOtlpResponse, encodeRpcStatus } from "../../src/protocol/otlp-protobuf.ts";

// Attributes of every OTLP AnyValue kind the SDKs send.
const resource = resourceFromAttributes({
  "service.name": "checkout",
  "host.cpus": 8,
  "host.load": 0.75,
  "host.virtual": true,
  "host.ips": ["10.0.0.1", "10.0.0.2"],
});
const attributes = { "http.route": "/pay", "retry.count": 2, "offset.ms": -3, ratio: 0.25, cached: false, tags: ["a", "b"] };

async function collectMetrics(record: (meter: ReturnType<MeterProvider["getMeter"]>) => void) {
  const reader = new ManualReader();
  const provider = new MeterProvider({ resource, readers: [reader] });
  record(provider.getMeter("billing", "1.2.0"));
  const { resourceMetrics, errors } = await reader.collect();
  assert.deepEqual(errors, []);
  await provider.shutdown();
  return resourceMetrics;
}

type Parsed = { metrics: MetricsRequest; traces: TracesRequest; logs: LogsRequest };

/** Both encodings of the same telemetry, each normalised by the one OTLP JSON schema: they must agree. */
function normaliseBoth<S extends OtlpSignal>(
  signal: S,
  protobufBytes: Uint8Array | undefined,
  jsonBytes: Uint8Array | undefined,
): Parsed[S] {
  assert.ok(protobufBytes && jsonBytes);
  const schema = otlpSignals[signal].schema;
  const fromProtobuf = schema.parse(decodeOtlpProtobuf(signal, protobufBytes));
  const fromJson = schema.parse(JSON.parse(new TextDecoder().decode(jsonBytes)));
  assert.deepEqual(fromProtobuf, fromJson);
  return fromProtobuf as Parsed[S];
}

/** Length-delimited field: tag byte, varint length, contents. */
function delimited(tag: number, contents: number[]): number[] {
  const out = [tag];
  let n = contents.length;
  for (; n > 127; n >>>= 7) out.push((n & 127) | 128);
  return [...out, n, ...contents];
}

/** A logs request whose one record's body is an AnyValue array nested `depth` times. */
function deeplyNestedLogBody(depth: number): Uint8Array {
  let value = delimited(0x0a, [0x78]); // AnyValue { string_value: "x" }
  for (let i = 0; i < depth; i++) value = delimited(0x2a, delimited(0x0a, value)); // { array_value { values: [value] } }
  return Uint8Array.from(delimited(0x0a, delimited(0x12, delimited(0x12, delimited(0x2a, value)))));
}

describe("decodeOtlpProtobuf", () => {
  test("metrics: protobuf and JSON of the same gauges and monotonic sums normalise alike", async () => {
    const metrics = await collectMetrics((meter) => {
      meter.createGauge("queue.depth", { valueType: ValueType.INT }).record(-5, attributes);
      meter.createGauge("cpu.utilization", { unit: "1", description: "busy share" }).record(0.5);
      meter.createCounter("requests", { valueType: ValueType.INT }).add(3, { "http.route": "/pay" });
      meter.createCounter("bytes.sent", { unit: "By" }).add(1.5);
    });
    const parsed = normaliseBoth(
      "metrics",
      ProtobufMetricsSerializer.serializeRequest(metrics),
      JsonMetricsSerializer.serializeRequest(metrics),
    );

    const scope = parsed.resourceMetrics[0]!.scopeMetrics[0]!;
    assert.deepEqual(scope.scope, { name: "billing", version: "1.2.0", attributes: [], droppedAttributesCount: 0 });
    const byName = Object.fromEntries(scope.metrics.map((m) => [m.name, m]));
    assert.equal(byName["queue.depth"]!.gauge!.dataPoints[0]!.asInt, "-5");
    assert.equal(byName["cpu.utilization"]!.gauge!.dataPoints[0]!.asDouble, 0.5);
    assert.deepEqual(
      { ...byName.requests!.sum!, dataPoints: undefined },
      { aggregationTemporality: 2, isMonotonic: true, dataPoints: undefined },
    );
    assert.equal(byName["bytes.sent"]!.sum!.dataPoints[0]!.asDouble, 1.5);
    assert.match(byName.requests!.sum!.dataPoints[0]!.timeUnixNano, /^\d{19}$/);
  });

  test("metrics: a histogram keeps its presence and its point count, contents skipped", async () => {
    const metrics = await collectMetrics((meter) => {
      const histogram = meter.createHistogram("latency");
      histogram.record(12, { route: "a" });
      histogram.record(7, { route: "b" });
    });
    const decoded = decodeOtlpProtobuf("metrics", ProtobufMetricsSerializer.serializeRequest(metrics)!) as any;
    const metric = decoded.resourceMetrics[0].scopeMetrics[0].metrics[0];
    assert.deepEqual(metric, { name: "latency", histogram: { dataPoints: [{}, {}] } });
    assert.ok(!otlpSignals.metrics.schema.safeParse(decoded).success, "the schema refuses what we do not relay");
  });

  test("traces: a child span with events, a link and an error status normalises like its JSON", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const tracer = provider.getTracer("checkout-http", "0.9.1");
    const parent = tracer.startSpan("POST /pay", { kind: SpanKind.SERVER });
    const linked = { traceId: "4BF92F3577B34DA6A3CE929D0E0E4736", spanId: "00F067AA0BA902B7", traceFlags: 1 };
    const child = tracer.startSpan(
      "charge card",
      {
        kind: SpanKind.CLIENT,
        attributes,
        links: [{ context: { ...linked, traceState: createTraceState("vendor=abc") }, attributes: { "link.reason": "batch" } }],
      },
      trace.setSpan(ROOT_CONTEXT, parent),
    );
    child.addEvent("retry", { attempt: 2 });
    child.setStatus({ code: SpanStatusCode.ERROR, message: "card declined" });
    child.end();
    // UNSET would differ: the OTel JSON serializer writes `code: 0`, which protobuf (proto3) never carries.
    parent.setStatus({ code: SpanStatusCode.OK });
    parent.end();
    const spans = exporter.getFinishedSpans();
    const decoded = decodeOtlpProtobuf("traces", ProtobufTraceSerializer.serializeRequest(spans)!) as any;
    const parsed = normaliseBoth("traces", ProtobufTraceSerializer.serializeRequest(spans), JsonTraceSerializer.serializeRequest(spans));

    const rawChild = decoded.resourceSpans[0].scopeSpans[0].spans[0];
    assert.equal(rawChild.traceId, child.spanContext().traceId);
    assert.equal(rawChild.parentSpanId, parent.spanContext().spanId);
    const out = parsed.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
    assert.equal(out.name, "charge card");
    assert.equal(out.kind, 3);
    assert.deepEqual(out.status, { code: 2, message: "card declined" });
    assert.equal(out.events[0]!.name, "retry");
    assert.deepEqual(
      { ...out.links[0]!, attributes: undefined },
      {
        traceId: linked.traceId.toLowerCase(),
        spanId: linked.spanId.toLowerCase(),
        traceState: "vendor=abc",
        attributes: undefined,
        droppedAttributesCount: 0,
      },
    );
    await provider.shutdown();
  });

  test("logs: records with severity, map and bytes values, and a span context normalise like their JSON", async () => {
    const exporter = new InMemoryLogRecordExporter();
    const provider = new LoggerProvider({ resource, processors: [new SimpleLogRecordProcessor({ exporter })] });
    const logger = provider.getLogger("payments", "2.0.0");
    const spanContext = { traceId: "5b8efff798038103d269b633813fc60c", spanId: "eee19b7ec3c1b174", traceFlags: 1 };
    logger.emit({
      severityNumber: SeverityNumber.WARN,
      severityText: "WARN",
      body: { msg: "card declined", codes: [51, 5], detail: { issuer: "acme", retryable: false } },
      attributes: { ...attributes, digest: new Uint8Array([0, 1, 254, 255]) },
      context: trace.setSpanContext(ROOT_CONTEXT, spanContext),
    });
    logger.emit({ severityNumber: SeverityNumber.INFO, body: "settled" });
    const records = exporter.getFinishedLogRecords();
    const parsed = normaliseBoth("logs", ProtobufLogsSerializer.serializeRequest(records), JsonLogsSerializer.serializeRequest(records));

    const [warn, info] = parsed.resourceLogs[0]!.scopeLogs[0]!.logRecords;
    assert.equal(warn!.severityNumber, 13);
    assert.equal(warn!.traceId, spanContext.traceId);
    assert.equal(warn!.spanId, spanContext.spanId);
    assert.equal(warn!.flags, 1);
    assert.deepEqual(warn!.attributes.find((a) => a.key === "digest")!.value, { bytesValue: "AAH+/w==" });
    assert.deepEqual(warn!.body!.kvlistValue!.values[1], {
      key: "codes",
      value: { arrayValue: { values: [{ intValue: "51" }, { intValue: "5" }] } },
    });
    assert.deepEqual(info!.body, { stringValue: "settled" });
    assert.equal(info!.traceId, "");
    await provider.shutdown();
  });

  test("proto3 zero values are omitted, as proto3 JSON omits them", () => {
    // ExportTraceServiceRequest { resource_spans { scope_spans { spans { kind: 0 (explicit), status {code: 0} } } } }
    const body = Uint8Array.from([0x0a, 0x0a, 0x12, 0x08, 0x12, 0x06, 0x30, 0x00, 0x7a, 0x02, 0x18, 0x00]);
    const decoded = decodeOtlpProtobuf("traces", body) as any;
    assert.deepEqual(decoded.resourceSpans[0].scopeSpans[0].spans[0], {
      attributes: [],
      events: [],
      links: [],
      status: {},
    });
  });

  test("undecodable bodies throw OtlpDecodeError, never a partial object, and never echo the body", async () => {
    const exporter = new InMemoryLogRecordExporter();
    const provider = new LoggerProvider({ processors: [new SimpleLogRecordProcessor({ exporter })] });
    provider.getLogger("x").emit({ body: "secret-token-123" });
    const valid = ProtobufLogsSerializer.serializeRequest(exporter.getFinishedLogRecords())!;
    const bodies = {
      truncated: valid.subarray(0, valid.length - 4),
      "invalid wire type 6": Uint8Array.from([0x0e, 0x00]),
      "unterminated varint": Uint8Array.from([0x08, 0xff, 0xff, 0xff]),
      "text, not protobuf": new TextEncoder().encode("secret-token-123 is not protobuf"),
      "JSON sent as protobuf": new TextEncoder().encode('{"resourceLogs":[]}'),
      // resource_logs { scope_logs { log_records { severity_text: "\xff" } } }: proto3 strings must be UTF-8
      "invalid UTF-8": Uint8Array.from([0x0a, 0x07, 0x12, 0x05, 0x12, 0x03, 0x1a, 0x01, 0xff]),
      "nested past the recursion limit": deeplyNestedLogBody(500),
    };
    for (const [what, body] of Object.entries(bodies)) {
      assert.throws(
        () => decodeOtlpProtobuf("logs", body),
        (error) =>
          error instanceof OtlpDecodeError &&
          error.code === "EGRESS_ERR_OTLP_PROTOBUF" &&
          error.message.includes("ExportLogsServiceRequest") &&
          !error.message.includes("secret"),
        what,
      );
    }
    await provider.shutdown();
  });

  test("an empty body is an empty request", () => {
    assert.deepEqual(decodeOtlpProtobuf("metrics", new Uint8Array()), { resourceMetrics: [] });
  });

  test("a body of more messages than the limit is charged their count before any is made; one within it, as each is made", () => {
    const LIMIT = 1000;
    /** The server's account: 413 (here: a thrown count) once the messages charged pass the limit. */
    const account = () => {
      const charges: number[] = [];
      let total = 0;
      const charge = (count: number) => {
        charges.push(count);
        total += count;
        if (total > LIMIT) throw new HttpError("EGRESS_ERR_BODY_TOO_MANY_ITEMS", `more than ${LIMIT}`);
      };
      return { charges, charge };
    };
    const empties = (count: number) => Buffer.alloc(2 * count, Buffer.from([0x0a, 0x00])); // empty ResourceMetrics
    const bomb = account();
    assert.throws(() => decodeOtlpProtobuf("metrics", empties(400_000), bomb.charge, LIMIT), { code: "EGRESS_ERR_BODY_TOO_MANY_ITEMS" });
    assert.deepEqual(bomb.charges, [LIMIT + 1], "one charge of what was counted (stopping past the limit), nothing made");
    // Long enough to be counted (an unknown field of ten bytes besides), and within the limit: charged one by one as made.
    const full = account();
    const unknown = Buffer.from([0x12, 0x0a, ...Buffer.alloc(10)]);
    const decoded = decodeOtlpProtobuf("metrics", Buffer.concat([empties(LIMIT), unknown]), full.charge, LIMIT) as {
      resourceMetrics: unknown[];
    };
    assert.equal(decoded.resourceMetrics.length, LIMIT);
    assert.equal(full.charges.length, LIMIT);
    // A histogram's point holding a field numbered 0 (tag 5, as a fieldless type reads it: skipped) ahead of the
    // bomb: counted through, not stopped there, so the bomb is still refused before anything is made.
    const prefix = Buffer.from([0x0a, 0x0d, 0x12, 0x0b, 0x12, 0x09, 0x4a, 0x07, 0x0a, 0x05, 0x05, 0, 0, 0, 0]);
    const hidden = account();
    assert.throws(() => decodeOtlpProtobuf("metrics", Buffer.concat([prefix, empties(LIMIT + 1)]), hidden.charge, LIMIT));
    assert.deepEqual(hidden.charges, [LIMIT + 1], "counted past the limit at once");
    // Long enough to be counted but broken after ten messages (zero bytes are no tag): the count stops there, and the
    // decode says why, as it would have without the count.
    const padded = Buffer.concat([empties(10), Buffer.from([0x12, 0x7f]), Buffer.alloc(0x7f), Buffer.alloc(2 * LIMIT)]);
    const within = account();
    assert.throws(() => decodeOtlpProtobuf("metrics", padded, within.charge, LIMIT), OtlpDecodeError);
    assert.equal(within.charges.length, 10);
  });
});

// Descriptors written from the .proto text, independently of src/protocol/otlp-proto-schema.ts.
const responseProtos = protobuf.parse(`
  syntax = "proto3";
  package check;
  message ExportMetricsPartialSuccess { int64 rejected_data_points = 1; string error_message = 2; }
  message ExportTracePartialSuccess { int64 rejected_spans = 1; string error_message = 2; }
  message ExportLogsPartialSuccess { int64 rejected_log_records = 1; string error_message = 2; }
  message ExportMetricsServiceResponse { ExportMetricsPartialSuccess partial_success = 1; }
  message ExportTraceServiceResponse { ExportTracePartialSuccess partial_success = 1; }
  message ExportLogsServiceResponse { ExportLogsPartialSuccess partial_success = 1; }
  message Status { int32 code = 1; string message = 2; repeated bytes details = 3; }
`).root;
const decodeAs = (type: string, bytes: Uint8Array) => {
  const t = responseProtos.lookupType(`check.${type}`);
  return t.toObject(t.decode(bytes), { longs: String });
};

describe("encodeOtlpResponse", () => {
  test("is zero bytes when everything was accepted", () => {
    for (const signal of ["metrics", "traces", "logs"] as const) assert.equal(encodeOtlpResponse(signal).length, 0);
  });

  test("carries the partial success with each signal's rejected-count field", () => {
    const cases = [
      ["metrics", "ExportMetricsServiceResponse", "rejectedDataPoints", ProtobufMetricsSerializer],
      ["traces", "ExportTraceServiceResponse", "rejectedSpans", ProtobufTraceSerializer],
      ["logs", "ExportLogsServiceResponse", "rejectedLogRecords", ProtobufLogsSerializer],
    ] as const;
    for (const [signal, type, field, otelSerializer] of cases) {
      const bytes = encodeOtlpResponse(signal, { rejected: 3, errorMessage: "metrics[1]: must have exactly one of gauge or sum" });
      const expected = { [field]: 3, errorMessage: "metrics[1]: must have exactly one of gauge or sum" };
      assert.deepEqual(decodeAs(type, bytes), { partialSuccess: { ...expected, [field]: "3" } });
      // The OTel exporters' own response parser reads it the same way.
      assert.deepEqual(otelSerializer.deserializeResponse(bytes), { partialSuccess: expected });
    }
  });
});

describe("encodeRpcStatus", () => {
  test("round-trips code and message as a google.rpc.Status", () => {
    assert.deepEqual(decodeAs("Status", encodeRpcStatus(3, "request body is not valid")), {
      code: 3,
      message: "request body is not valid",
    });
  });
});
