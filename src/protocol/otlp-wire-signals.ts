import type { OtlpSignal } from "./otlp.ts";
import { anyValue, clearOneof, keyValue, levels, listOf, putNumber, putString, type Json, type MessageWalk } from "./otlp-wire.ts";

// The signals' own messages, walked as src/protocol/otlp-wire.ts says, with the fields otlp-proto-schema.ts declares.

/** A fixed64 timestamp outside a oneof: zero is no field at all. */
function putTime(message: Json, key: string, value: string): void {
  if (value !== "0") message[key] = value;
  else delete message[key];
}

/** NumberDataPoint {start_time_unix_nano = 2, time_unix_nano = 3, as_double = 4, as_int = 6, attributes = 7, flags = 8}. */
const numberDataPoint: MessageWalk = (wire, end, depth) => {
  const point: Json = { attributes: [] };
  const attributes = point.attributes as Json[];
  let value = false; // a member of the `value` oneof is set
  const reader = wire.reader;
  while (reader.pos < end) {
    const tag = reader.tag();
    switch (tag) {
      case 58:
        attributes.push(wire.message(depth, keyValue));
        break;
      case 17:
        putTime(point, "startTimeUnixNano", wire.fixed64(false));
        break;
      case 25:
        putTime(point, "timeUnixNano", wire.fixed64(false));
        break;
      case 33:
        if (value) delete point.asInt;
        point.asDouble = wire.double();
        value = true;
        break;
      case 49:
        if (value) delete point.asDouble;
        point.asInt = wire.fixed64(true);
        value = true;
        break;
      case 64:
        putNumber(point, "flags", reader.uint32());
        break;
      default:
        wire.skip(tag, depth);
    }
  }
  return point;
};

/** What we do not relay (histograms, summaries): each point is `{}`, its fields checked and skipped. */
const skippedDataPoint: MessageWalk = (wire, end, depth) => {
  const reader = wire.reader;
  while (reader.pos < end) {
    // As protobufjs's decoder of a message without fields has it: the whole tag where the field number goes, so a
    // group here is refused (its end tag never matches) and field number 0 is not.
    const tag = reader.tag();
    reader.skipType(tag & 7, depth, tag);
  }
  return {};
};

/** Sum {data_points = 1, aggregation_temporality = 2, is_monotonic = 3}. */
const sum: MessageWalk = (wire, end, depth, into) => {
  const message = into ?? { dataPoints: [] };
  const reader = wire.reader;
  while (reader.pos < end) {
    const tag = reader.tag();
    if (tag === 10) (message.dataPoints as Json[]).push(wire.message(depth, numberDataPoint));
    else if (tag === 16) putNumber(message, "aggregationTemporality", reader.int32());
    else if (tag === 24) {
      if (reader.bool()) message.isMonotonic = true;
      else delete message.isMonotonic;
    } else wire.skip(tag, depth);
  }
  return message;
};

const METRIC_DATA: Record<number, readonly [string, MessageWalk]> = {
  42: ["gauge", listOf("dataPoints", numberDataPoint)],
  58: ["sum", sum],
  74: ["histogram", listOf("dataPoints", skippedDataPoint)],
  82: ["exponentialHistogram", listOf("dataPoints", skippedDataPoint)],
  90: ["summary", listOf("dataPoints", skippedDataPoint)],
};
const METRIC_DATA_MEMBERS = Object.values(METRIC_DATA).map(([key]) => key);

/** Metric {name = 1, description = 2, unit = 3, and the `data` oneof: gauge = 5, sum = 7, histogram = 9, ...}. */
const metric: MessageWalk = (wire, end, depth) => {
  const message: Json = {};
  const reader = wire.reader;
  while (reader.pos < end) {
    const tag = reader.tag();
    const data = METRIC_DATA[tag];
    if (data) {
      const [key, walk] = data;
      clearOneof(message, METRIC_DATA_MEMBERS, key);
      message[key] = wire.message(depth, walk, message[key] as Json | undefined);
    } else if (tag === 10) putString(message, "name", wire.string());
    else if (tag === 18) putString(message, "description", wire.string());
    else if (tag === 26) putString(message, "unit", wire.string());
    else wire.skip(tag, depth);
  }
  return message;
};

/** Status {message = 2, code = 3}. */
const status: MessageWalk = (wire, end, depth, into) => {
  const message = into ?? {};
  const reader = wire.reader;
  while (reader.pos < end) {
    const tag = reader.tag();
    if (tag === 18) putString(message, "message", wire.string());
    else if (tag === 24) putNumber(message, "code", reader.int32());
    else wire.skip(tag, depth);
  }
  return message;
};

/** Span.Event {time_unix_nano = 1, name = 2, attributes = 3, dropped_attributes_count = 4}. */
const event: MessageWalk = (wire, end, depth) => {
  const message: Json = { attributes: [] };
  const reader = wire.reader;
  while (reader.pos < end) {
    const tag = reader.tag();
    if (tag === 9) putTime(message, "timeUnixNano", wire.fixed64(false));
    else if (tag === 18) putString(message, "name", wire.string());
    else if (tag === 26) (message.attributes as Json[]).push(wire.message(depth, keyValue));
    else if (tag === 32) putNumber(message, "droppedAttributesCount", reader.uint32());
    else wire.skip(tag, depth);
  }
  return message;
};

/** Span.Link {trace_id = 1, span_id = 2, trace_state = 3, attributes = 4, dropped_attributes_count = 5}. */
const link: MessageWalk = (wire, end, depth) => {
  const message: Json = { attributes: [] };
  const reader = wire.reader;
  while (reader.pos < end) {
    const tag = reader.tag();
    if (tag === 10) putString(message, "traceId", wire.bytes("hex"));
    else if (tag === 18) putString(message, "spanId", wire.bytes("hex"));
    else if (tag === 26) putString(message, "traceState", wire.string());
    else if (tag === 34) (message.attributes as Json[]).push(wire.message(depth, keyValue));
    else if (tag === 40) putNumber(message, "droppedAttributesCount", reader.uint32());
    else wire.skip(tag, depth);
  }
  return message;
};

/** Span: ids 1, 2, 4 (parent), trace_state = 3, name = 5, kind = 6, times 7, 8, attributes 9, 10, events 11, 12, links 13, 14, status = 15, flags = 16. */
const span: MessageWalk = (wire, end, depth) => {
  const message: Json = { attributes: [], events: [], links: [] };
  const reader = wire.reader;
  while (reader.pos < end) {
    const tag = reader.tag();
    switch (tag) {
      case 10:
        putString(message, "traceId", wire.bytes("hex"));
        break;
      case 18:
        putString(message, "spanId", wire.bytes("hex"));
        break;
      case 26:
        putString(message, "traceState", wire.string());
        break;
      case 34:
        putString(message, "parentSpanId", wire.bytes("hex"));
        break;
      case 42:
        putString(message, "name", wire.string());
        break;
      case 48:
        putNumber(message, "kind", reader.int32());
        break;
      case 57:
        putTime(message, "startTimeUnixNano", wire.fixed64(false));
        break;
      case 65:
        putTime(message, "endTimeUnixNano", wire.fixed64(false));
        break;
      case 74:
        (message.attributes as Json[]).push(wire.message(depth, keyValue));
        break;
      case 80:
        putNumber(message, "droppedAttributesCount", reader.uint32());
        break;
      case 90:
        (message.events as Json[]).push(wire.message(depth, event));
        break;
      case 96:
        putNumber(message, "droppedEventsCount", reader.uint32());
        break;
      case 106:
        (message.links as Json[]).push(wire.message(depth, link));
        break;
      case 112:
        putNumber(message, "droppedLinksCount", reader.uint32());
        break;
      case 122:
        message.status = wire.message(depth, status, message.status as Json | undefined);
        break;
      case 133:
        putNumber(message, "flags", reader.fixed32());
        break;
      default:
        wire.skip(tag, depth);
    }
  }
  return message;
};

/** LogRecord: times 1 and 11 (observed), severity 2 and 3, body = 5, attributes 6 and 7, flags = 8, ids 9 and 10. */
const logRecord: MessageWalk = (wire, end, depth) => {
  const message: Json = { attributes: [] };
  const reader = wire.reader;
  while (reader.pos < end) {
    const tag = reader.tag();
    switch (tag) {
      case 9:
        putTime(message, "timeUnixNano", wire.fixed64(false));
        break;
      case 89:
        putTime(message, "observedTimeUnixNano", wire.fixed64(false));
        break;
      case 16:
        putNumber(message, "severityNumber", reader.int32());
        break;
      case 26:
        putString(message, "severityText", wire.string());
        break;
      case 42:
        message.body = wire.message(depth, anyValue, message.body as Json | undefined);
        break;
      case 50:
        (message.attributes as Json[]).push(wire.message(depth, keyValue));
        break;
      case 56:
        putNumber(message, "droppedAttributesCount", reader.uint32());
        break;
      case 69:
        putNumber(message, "flags", reader.fixed32());
        break;
      case 74:
        putString(message, "traceId", wire.bytes("hex"));
        break;
      case 82:
        putString(message, "spanId", wire.bytes("hex"));
        break;
      default:
        wire.skip(tag, depth);
    }
  }
  return message;
};

/** Export{Metrics,Trace,Logs}ServiceRequest, each walked into the OTLP JSON object form. */
export const otlpRequestWalks: Record<OtlpSignal, MessageWalk> = {
  metrics: levels(["resourceMetrics", "scopeMetrics", "metrics"], metric),
  traces: levels(["resourceSpans", "scopeSpans", "spans"], span),
  logs: levels(["resourceLogs", "scopeLogs", "logRecords"], logRecord),
};
