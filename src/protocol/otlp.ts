import * as z from "zod";
import { beaconPaths } from "./beacon-paths.ts";

/** OTLP/HTTP's binary encoding: the media type of protobuf requests and of their answers. */
export const PROTOBUF_MEDIA_TYPE = "application/x-protobuf";

// OTLP/HTTP JSON (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding), limited to the shapes
// docs/PROTOCOL.md ("OTLP JSON") names. Parsing also normalises: 64-bit integers become decimal strings (senders
// use numbers or strings), ids become lower-case hex, omitted defaults are filled in. Unknown fields are dropped, as
// the OTLP spec asks of receivers.

const int64Pattern = /^-?\d+$/;
/** Already as BigInt(v).toString() would write it (no leading zeros, no "-0"): kept as it is, which is most values. */
const canonicalInt = /^(?:0|-?[1-9]\d*)$/;

/** OTLP's 64-bit fields are signed (int64, sfixed64) or unsigned (fixed64 times): one range takes both. */
const INT64_MIN = -(2n ** 63n);
const UINT64_MAX = 2n ** 64n - 1n;
const in64Bits = (v: bigint) => v >= INT64_MIN && v <= UINT64_MAX;
// zod runs every check even after one failed: each range check only looks at what the format check passes.
const stringIn64Bits = (v: string) => v.length > 21 || !int64Pattern.test(v) || in64Bits(BigInt(v));
const numberIn64Bits = (v: number) => !Number.isInteger(v) || in64Bits(BigInt(v));
const RANGE = { message: "must fit 64 bits (-2^63 to 2^64-1)" };

/**
 * A 64-bit integer as OTLP JSON carries it: a decimal string or a JSON number. Normalised to a string. Bounded to 64
 * bits before any BigInt is made of it: a string of millions of digits is stored as sent otherwise, and its
 * conversion holds the event loop for seconds.
 */
export const Int64 = z
  .union([
    z
      .string()
      .max(21, RANGE) // a sign and 20 digits
      .regex(int64Pattern, { message: "must be a decimal integer string" })
      .refine(stringIn64Bits, RANGE),
    z.number().refine(Number.isInteger, { message: "must be an integer" }).refine(numberIn64Bits, RANGE),
  ])
  .transform((v) => {
    if (typeof v === "string") return canonicalInt.test(v) ? v : BigInt(v).toString();
    return Number.isSafeInteger(v) ? String(v) : BigInt(v).toString();
  });

export const UnixNano = Int64.refine((v) => !v.startsWith("-"), { message: "must not be negative" });

const hexId = (bytes: number, allowEmpty: boolean) => {
  const exact = new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`);
  return z
    .string()
    .refine((v) => (allowEmpty && v === "") || exact.test(v), {
      message: `must be ${bytes * 2} hex digits${allowEmpty ? " or empty" : ""}`,
    })
    .transform((v) => v.toLowerCase());
};
export const TraceId = hexId(16, false);
export const SpanId = hexId(8, false);
const OptionalTraceId = hexId(16, true).default("");
const OptionalSpanId = hexId(8, true).default("");

const DroppedCount = z.int().nonnegative().default(0);

export const AnyValue = z.object({
  stringValue: z.string().optional(),
  boolValue: z.boolean().optional(),
  intValue: Int64.optional(),
  doubleValue: z.number().optional(),
  bytesValue: z.base64().optional(),
  get arrayValue() {
    return z.object({ values: z.array(AnyValue).default([]) }).optional();
  },
  get kvlistValue() {
    return z.object({ values: z.array(KeyValue).default([]) }).optional();
  },
});
export type AnyValue = z.infer<typeof AnyValue>;

export const KeyValue = z.object({
  key: z.string(),
  get value(): z.ZodDefault<typeof AnyValue> {
    return AnyValue.default({});
  },
});
export type KeyValue = z.infer<typeof KeyValue>;

const Attributes = z.array(KeyValue).default([]);

export const Resource = z.object({ attributes: Attributes, droppedAttributesCount: DroppedCount });

export const Scope = z.object({
  name: z.string().default(""),
  version: z.string().default(""),
  attributes: Attributes,
  droppedAttributesCount: DroppedCount,
});

// ---- metrics ----

export const NumberDataPoint = z
  .object({
    attributes: Attributes,
    startTimeUnixNano: UnixNano.optional(),
    timeUnixNano: UnixNano,
    asDouble: z.number().optional(),
    asInt: Int64.optional(),
  })
  .refine((p) => (p.asDouble === undefined) !== (p.asInt === undefined), {
    message: "must have exactly one of asDouble or asInt",
  });

export const Metric = z
  .object({
    name: z.string().min(1, { message: "must not be empty" }),
    unit: z.string().default(""),
    description: z.string().default(""),
    gauge: z.object({ dataPoints: z.array(NumberDataPoint).default([]) }).optional(),
    sum: z
      .object({
        dataPoints: z.array(NumberDataPoint).default([]),
        aggregationTemporality: z.int().min(0).max(2).default(0),
        isMonotonic: z.boolean().default(false),
      })
      .optional(),
  })
  .refine((m) => (m.gauge === undefined) !== (m.sum === undefined), {
    message: "must have exactly one of gauge or sum",
  });
export type Metric = z.infer<typeof Metric>;

export const MetricsRequest = z.object({
  resourceMetrics: z.array(
    z.object({
      resource: Resource.default({ attributes: [], droppedAttributesCount: 0 }),
      scopeMetrics: z.array(z.object({ scope: Scope.optional(), metrics: z.array(Metric).default([]) })).default([]),
    }),
  ),
});
export type MetricsRequest = z.infer<typeof MetricsRequest>;

// ---- traces ----

export const Span = z.object({
  traceId: TraceId,
  spanId: SpanId,
  traceState: z.string().optional(),
  parentSpanId: OptionalSpanId,
  flags: z.int().nonnegative().optional(),
  name: z.string().default(""),
  kind: z.int().min(0).max(5).optional(),
  startTimeUnixNano: UnixNano,
  endTimeUnixNano: UnixNano,
  attributes: Attributes,
  droppedAttributesCount: DroppedCount,
  events: z
    .array(
      z.object({
        timeUnixNano: UnixNano,
        name: z.string().default(""),
        attributes: Attributes,
        droppedAttributesCount: DroppedCount,
      }),
    )
    .default([]),
  droppedEventsCount: DroppedCount,
  links: z
    .array(
      z.object({
        traceId: TraceId,
        spanId: SpanId,
        traceState: z.string().optional(),
        attributes: Attributes,
        droppedAttributesCount: DroppedCount,
      }),
    )
    .default([]),
  droppedLinksCount: DroppedCount,
  // code 0 (unset) is given whether the sender wrote it (JSON) or left it out (protobuf, as proto3 does zero values).
  status: z.object({ message: z.string().optional(), code: z.int().min(0).max(2).default(0) }).prefault({}),
});
export type Span = z.infer<typeof Span>;

export const TracesRequest = z.object({
  resourceSpans: z.array(
    z.object({
      resource: Resource.default({ attributes: [], droppedAttributesCount: 0 }),
      scopeSpans: z.array(z.object({ scope: Scope.optional(), spans: z.array(Span).default([]) })).default([]),
    }),
  ),
});
export type TracesRequest = z.infer<typeof TracesRequest>;

// ---- logs ----

export const LogRecord = z.object({
  timeUnixNano: UnixNano.default("0"),
  observedTimeUnixNano: UnixNano.optional(),
  severityNumber: z.int().min(0).max(24).default(0),
  severityText: z.string().default(""),
  body: AnyValue.optional(),
  attributes: Attributes,
  droppedAttributesCount: DroppedCount,
  flags: z.int().nonnegative().optional(),
  traceId: OptionalTraceId,
  spanId: OptionalSpanId,
});
export type LogRecord = z.infer<typeof LogRecord>;

export const LogsRequest = z.object({
  resourceLogs: z.array(
    z.object({
      resource: Resource.default({ attributes: [], droppedAttributesCount: 0 }),
      scopeLogs: z.array(z.object({ scope: Scope.optional(), logRecords: z.array(LogRecord).default([]) })).default([]),
    }),
  ),
});
export type LogsRequest = z.infer<typeof LogsRequest>;

/**
 * The three operational signals: request schema, beacon path, the field names of their nesting (resource
 * list, scope list, item list) and of the partial-success count, and how many items a request holds.
 */
export const otlpSignals = {
  metrics: {
    schema: MetricsRequest,
    path: beaconPaths.metrics,
    fields: { resources: "resourceMetrics", scopes: "scopeMetrics", items: "metrics", rejected: "rejectedDataPoints" },
    countItems: (r: MetricsRequest) =>
      sumOf(r.resourceMetrics, (rm) => sumOf(rm.scopeMetrics, (sm) => sumOf(sm.metrics, (m) => (m.gauge ?? m.sum)!.dataPoints.length))),
  },
  traces: {
    schema: TracesRequest,
    path: beaconPaths.traces,
    fields: { resources: "resourceSpans", scopes: "scopeSpans", items: "spans", rejected: "rejectedSpans" },
    countItems: (r: TracesRequest) => sumOf(r.resourceSpans, (rs) => sumOf(rs.scopeSpans, (ss) => ss.spans.length)),
  },
  logs: {
    schema: LogsRequest,
    path: beaconPaths.logs,
    fields: { resources: "resourceLogs", scopes: "scopeLogs", items: "logRecords", rejected: "rejectedLogRecords" },
    countItems: (r: LogsRequest) => sumOf(r.resourceLogs, (rl) => sumOf(rl.scopeLogs, (sl) => sl.logRecords.length)),
  },
} as const;
export type OtlpSignal = keyof typeof otlpSignals;
/** The three signals, in one list (metrics, traces, logs). */
export const OTLP_SIGNALS = Object.keys(otlpSignals) as OtlpSignal[];
export type OtlpRequest = MetricsRequest | TracesRequest | LogsRequest;

function sumOf<T>(items: readonly T[], count: (item: T) => number): number {
  return items.reduce((total, item) => total + count(item), 0);
}
