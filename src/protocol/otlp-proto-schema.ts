import protobuf from "protobufjs";

// The OTLP messages we decode, as a protobufjs JSON descriptor (no .proto read at runtime, so a compiled
// dist needs no extra files). Requests are decoded by the walk in src/protocol/otlp-wire*.ts, which has these field
// numbers written out and is held to protobufjs's decode and toObject of these types by
// test/protocol/otlp-protobuf-equivalence.test.ts; responses and google.rpc.Status are encoded with them. Field numbers and wire types follow opentelemetry-proto
// (opentelemetry/proto/{common,resource,metrics,trace,logs}/v1 and collector/*/v1) and google/rpc/status.proto.
// Only the fields src/protocol/otlp.ts uses are declared: protobufjs skips the rest, as OTLP receivers must.
// Field names are lowerCamelCase here because JSON descriptors are taken as given (only the .proto parser
// converts case), and toObject then yields the OTLP JSON names. Enum fields (SpanKind, StatusCode,
// SeverityNumber, AggregationTemporality) are declared int32: proto3 enums are open and varint-encoded, so
// decoding is identical and values stay numbers.
// With no syntax given, JSON descriptors get proto3 semantics: zero scalars are omitted, strings must be UTF-8.

type FieldJson = { id: number; type: string; rule?: "repeated" };
const field = (id: number, type: string): FieldJson => ({ id, type });
const repeated = (id: number, type: string): FieldJson => ({ id, type, rule: "repeated" });
const message = (fields: Record<string, FieldJson>, oneofs?: Record<string, string[]>) => ({
  fields,
  ...(oneofs && { oneofs: Object.fromEntries(Object.entries(oneofs).map(([name, oneof]) => [name, { oneof }])) }),
});

const common = "opentelemetry.proto.common.v1";
const KeyValue = `${common}.KeyValue`;
const AnyValue = `${common}.AnyValue`;
const Scope = `${common}.InstrumentationScope`;
const Resource = "opentelemetry.proto.resource.v1.Resource";

// One entry per proto package; each holds its message types.
const packages: Record<string, Record<string, unknown>> = {
  [common]: {
    AnyValue: message(
      {
        stringValue: field(1, "string"),
        boolValue: field(2, "bool"),
        intValue: field(3, "int64"),
        doubleValue: field(4, "double"),
        arrayValue: field(5, "ArrayValue"),
        kvlistValue: field(6, "KeyValueList"),
        bytesValue: field(7, "bytes"),
      },
      { value: ["stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue"] },
    ),
    ArrayValue: message({ values: repeated(1, "AnyValue") }),
    KeyValueList: message({ values: repeated(1, "KeyValue") }),
    KeyValue: message({ key: field(1, "string"), value: field(2, "AnyValue") }),
    InstrumentationScope: message({
      name: field(1, "string"),
      version: field(2, "string"),
      attributes: repeated(3, KeyValue),
      droppedAttributesCount: field(4, "uint32"),
    }),
  },
  "opentelemetry.proto.resource.v1": {
    Resource: message({ attributes: repeated(1, KeyValue), droppedAttributesCount: field(2, "uint32") }),
  },
  "opentelemetry.proto.metrics.v1": {
    ResourceMetrics: message({ resource: field(1, Resource), scopeMetrics: repeated(2, "ScopeMetrics"), schemaUrl: field(3, "string") }),
    ScopeMetrics: message({ scope: field(1, Scope), metrics: repeated(2, "Metric"), schemaUrl: field(3, "string") }),
    Metric: message(
      {
        name: field(1, "string"),
        description: field(2, "string"),
        unit: field(3, "string"),
        gauge: field(5, "Gauge"),
        sum: field(7, "Sum"),
        histogram: field(9, "Histogram"),
        exponentialHistogram: field(10, "ExponentialHistogram"),
        summary: field(11, "Summary"),
      },
      { data: ["gauge", "sum", "histogram", "exponentialHistogram", "summary"] },
    ),
    Gauge: message({ dataPoints: repeated(1, "NumberDataPoint") }),
    Sum: message({
      dataPoints: repeated(1, "NumberDataPoint"),
      aggregationTemporality: field(2, "int32"),
      isMonotonic: field(3, "bool"),
    }),
    // We relay only gauges and sums: these decode to `{dataPoints: [{}, ...]}` so the metric is seen (and
    // refused, counting its points) as a histogram rather than as a metric with no data at all.
    Histogram: message({ dataPoints: repeated(1, "SkippedDataPoint") }),
    ExponentialHistogram: message({ dataPoints: repeated(1, "SkippedDataPoint") }),
    Summary: message({ dataPoints: repeated(1, "SkippedDataPoint") }),
    SkippedDataPoint: message({}),
    NumberDataPoint: message(
      {
        attributes: repeated(7, KeyValue),
        startTimeUnixNano: field(2, "fixed64"),
        timeUnixNano: field(3, "fixed64"),
        asDouble: field(4, "double"),
        asInt: field(6, "sfixed64"),
        flags: field(8, "uint32"),
      },
      { value: ["asDouble", "asInt"] },
    ),
  },
  "opentelemetry.proto.trace.v1": {
    ResourceSpans: message({ resource: field(1, Resource), scopeSpans: repeated(2, "ScopeSpans"), schemaUrl: field(3, "string") }),
    ScopeSpans: message({ scope: field(1, Scope), spans: repeated(2, "Span"), schemaUrl: field(3, "string") }),
    Span: {
      ...message({
        traceId: field(1, "bytes"),
        spanId: field(2, "bytes"),
        traceState: field(3, "string"),
        parentSpanId: field(4, "bytes"),
        flags: field(16, "fixed32"),
        name: field(5, "string"),
        kind: field(6, "int32"),
        startTimeUnixNano: field(7, "fixed64"),
        endTimeUnixNano: field(8, "fixed64"),
        attributes: repeated(9, KeyValue),
        droppedAttributesCount: field(10, "uint32"),
        events: repeated(11, "Event"),
        droppedEventsCount: field(12, "uint32"),
        links: repeated(13, "Link"),
        droppedLinksCount: field(14, "uint32"),
        status: field(15, "Status"),
      }),
      nested: {
        Event: message({
          timeUnixNano: field(1, "fixed64"),
          name: field(2, "string"),
          attributes: repeated(3, KeyValue),
          droppedAttributesCount: field(4, "uint32"),
        }),
        Link: message({
          traceId: field(1, "bytes"),
          spanId: field(2, "bytes"),
          traceState: field(3, "string"),
          attributes: repeated(4, KeyValue),
          droppedAttributesCount: field(5, "uint32"),
        }),
      },
    },
    Status: message({ message: field(2, "string"), code: field(3, "int32") }),
  },
  "opentelemetry.proto.logs.v1": {
    ResourceLogs: message({ resource: field(1, Resource), scopeLogs: repeated(2, "ScopeLogs"), schemaUrl: field(3, "string") }),
    ScopeLogs: message({ scope: field(1, Scope), logRecords: repeated(2, "LogRecord"), schemaUrl: field(3, "string") }),
    LogRecord: message({
      timeUnixNano: field(1, "fixed64"),
      observedTimeUnixNano: field(11, "fixed64"),
      severityNumber: field(2, "int32"),
      severityText: field(3, "string"),
      body: field(5, AnyValue),
      attributes: repeated(6, KeyValue),
      droppedAttributesCount: field(7, "uint32"),
      flags: field(8, "fixed32"),
      traceId: field(9, "bytes"),
      spanId: field(10, "bytes"),
    }),
  },
  "opentelemetry.proto.collector.metrics.v1": exportService(
    "ExportMetrics",
    "resourceMetrics",
    "opentelemetry.proto.metrics.v1.ResourceMetrics",
    "rejectedDataPoints",
  ),
  "opentelemetry.proto.collector.trace.v1": exportService(
    "ExportTrace",
    "resourceSpans",
    "opentelemetry.proto.trace.v1.ResourceSpans",
    "rejectedSpans",
  ),
  "opentelemetry.proto.collector.logs.v1": exportService(
    "ExportLogs",
    "resourceLogs",
    "opentelemetry.proto.logs.v1.ResourceLogs",
    "rejectedLogRecords",
  ),
  "google.rpc": { Status: message({ code: field(1, "int32"), message: field(2, "string") }) },
};

/** Export<X>ServiceRequest, Export<X>ServiceResponse and Export<X>PartialSuccess: the three share one layout. */
function exportService(prefix: string, resources: string, resourceType: string, rejected: string) {
  return {
    [`${prefix}ServiceRequest`]: message({ [resources]: repeated(1, resourceType) }),
    [`${prefix}ServiceResponse`]: message({ partialSuccess: field(1, `${prefix}PartialSuccess`) }),
    [`${prefix}PartialSuccess`]: message({ [rejected]: field(1, "int64"), errorMessage: field(2, "string") }),
  };
}

export const otlpProtoRoot = new protobuf.Root();
for (const [name, types] of Object.entries(packages)) otlpProtoRoot.define(name, types);
otlpProtoRoot.resolveAll();

export const otlpProtoTypes = {
  requests: {
    metrics: otlpProtoRoot.lookupType("opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest"),
    traces: otlpProtoRoot.lookupType("opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest"),
    logs: otlpProtoRoot.lookupType("opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest"),
  },
  responses: {
    metrics: otlpProtoRoot.lookupType("opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse"),
    traces: otlpProtoRoot.lookupType("opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse"),
    logs: otlpProtoRoot.lookupType("opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse"),
  },
  rpcStatus: otlpProtoRoot.lookupType("google.rpc.Status"),
};
