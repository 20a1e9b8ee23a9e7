/**
 * The fast path of parseExport (otlp-request.ts): each part of an export request (resource, scope, metric, span,
 * log record) validated and normalised without zod, to the very value the schema in otlp.ts would output, or
 * undefined when refused. An object or list that already is that value (every key known, every default sent, every
 * value canonical) is returned itself, in the sender's key order; one that is not is built anew (the schema's key
 * order, defaults filled in, unknown keys dropped). Zod stays the schema of record: a refused part goes to zod,
 * which names the reason. jsonShapeProblem's bound (values and depth per part) is counted in the same walk. Inputs
 * are JSON.parse or protobufjs toObject output: plain data.
 */
import type { z } from "zod";
import type { AnyValue, KeyValue, LogRecord, Metric, NumberDataPoint, Resource, Scope } from "./otlp.ts";
import { anyValue, attributes } from "./otlp-fast-attributes.ts";
import {
  counted,
  editMark,
  hexId,
  int64,
  isFiniteNumber,
  isIntIn,
  isObjectAt,
  reusable,
  skipped,
  startPart,
  unixNano,
  validList,
} from "./otlp-fast-values.ts";
import { fastSpan } from "./otlp-fast-spans.ts";

export { fastSpan };
type Point = z.output<typeof NumberDataPoint>;

const MAX = Number.MAX_SAFE_INTEGER;

export function fastResource(raw: unknown): z.output<typeof Resource> | undefined {
  startPart();
  if (!isObjectAt(raw, 1)) return undefined;
  const mark = editMark();
  let attrs: KeyValue[] | undefined;
  let dropped: number | undefined;
  for (const key in raw) {
    if (!counted()) return undefined;
    const x = raw[key];
    if (key === "attributes") {
      attrs = attributes(x, 2);
      if (attrs === undefined) return undefined;
    } else if (key === "droppedAttributesCount") {
      if (!isIntIn(x, 0, MAX)) return undefined;
      dropped = x;
    } else if (!skipped(x, 2)) return undefined;
  }
  if (reusable(mark, attrs !== undefined && dropped !== undefined)) return raw as z.output<typeof Resource>;
  return { attributes: attrs ?? [], droppedAttributesCount: dropped ?? 0 };
}

export function fastScope(raw: unknown): z.output<typeof Scope> | undefined {
  startPart();
  if (!isObjectAt(raw, 1)) return undefined;
  const mark = editMark();
  let name: string | undefined;
  let version: string | undefined;
  let attrs: KeyValue[] | undefined;
  let dropped: number | undefined;
  for (const key in raw) {
    if (!counted()) return undefined;
    const x = raw[key];
    if (key === "name" || key === "version") {
      if (typeof x !== "string") return undefined;
      if (key === "name") name = x;
      else version = x;
    } else if (key === "attributes") {
      attrs = attributes(x, 2);
      if (attrs === undefined) return undefined;
    } else if (key === "droppedAttributesCount") {
      if (!isIntIn(x, 0, MAX)) return undefined;
      dropped = x;
    } else if (!skipped(x, 2)) return undefined;
  }
  const complete = name !== undefined && version !== undefined && attrs !== undefined && dropped !== undefined;
  if (reusable(mark, complete)) return raw as z.output<typeof Scope>;
  return { name: name ?? "", version: version ?? "", attributes: attrs ?? [], droppedAttributesCount: dropped ?? 0 };
}

export function fastMetric(raw: unknown): Metric | undefined {
  startPart();
  if (!isObjectAt(raw, 1)) return undefined;
  const mark = editMark();
  let name: string | undefined;
  let unit: string | undefined;
  let description: string | undefined;
  let gauge: Metric["gauge"];
  let sum: Metric["sum"];
  for (const key in raw) {
    if (!counted()) return undefined;
    const x = raw[key];
    if (key === "name" || key === "unit" || key === "description") {
      if (typeof x !== "string") return undefined;
      if (key === "name") name = x;
      else if (key === "unit") unit = x;
      else description = x;
    } else if (key === "gauge") {
      gauge = gaugeOf(x);
      if (gauge === undefined) return undefined;
    } else if (key === "sum") {
      sum = sumOf(x);
      if (sum === undefined) return undefined;
    } else if (!skipped(x, 2)) return undefined;
  }
  if (name === undefined || name.length === 0 || (gauge === undefined) === (sum === undefined)) return undefined;
  if (reusable(mark, unit !== undefined && description !== undefined)) return raw as Metric;
  const metric: Metric = { name, unit: unit ?? "", description: description ?? "" };
  if (gauge !== undefined) metric.gauge = gauge;
  if (sum !== undefined) metric.sum = sum;
  return metric;
}

function gaugeOf(v: unknown): Metric["gauge"] {
  if (!isObjectAt(v, 2)) return undefined;
  const mark = editMark();
  let dataPoints: Point[] | undefined;
  for (const key in v) {
    if (!counted()) return undefined;
    const x = v[key];
    if (key === "dataPoints") {
      dataPoints = pointsOf(x);
      if (dataPoints === undefined) return undefined;
    } else if (!skipped(x, 3)) return undefined;
  }
  return reusable(mark, dataPoints !== undefined) ? (v as Metric["gauge"]) : { dataPoints: dataPoints ?? [] };
}

function sumOf(v: unknown): Metric["sum"] {
  if (!isObjectAt(v, 2)) return undefined;
  const mark = editMark();
  let dataPoints: Point[] | undefined;
  let aggregationTemporality: number | undefined;
  let isMonotonic: boolean | undefined;
  for (const key in v) {
    if (!counted()) return undefined;
    const x = v[key];
    if (key === "dataPoints") {
      dataPoints = pointsOf(x);
      if (dataPoints === undefined) return undefined;
    } else if (key === "aggregationTemporality") {
      if (!isIntIn(x, 0, 2)) return undefined;
      aggregationTemporality = x;
    } else if (key === "isMonotonic") {
      if (typeof x !== "boolean") return undefined;
      isMonotonic = x;
    } else if (!skipped(x, 3)) return undefined;
  }
  if (reusable(mark, dataPoints !== undefined && aggregationTemporality !== undefined && isMonotonic !== undefined)) {
    return v as Metric["sum"];
  }
  return { dataPoints: dataPoints ?? [], aggregationTemporality: aggregationTemporality ?? 0, isMonotonic: isMonotonic ?? false };
}

const pointsOf = (v: unknown): Point[] | undefined => validList(v, 3, pointOf);

function pointOf(v: unknown): Point | undefined {
  if (!isObjectAt(v, 4)) return undefined;
  const mark = editMark();
  let attrs: KeyValue[] | undefined;
  let start: string | undefined;
  let time: string | undefined;
  let asDouble: number | undefined;
  let asInt: string | undefined;
  for (const key in v) {
    if (!counted()) return undefined;
    const x = v[key];
    if (key === "timeUnixNano" || key === "startTimeUnixNano") {
      const nanos = unixNano(x);
      if (nanos === undefined) return undefined;
      if (key === "timeUnixNano") time = nanos;
      else start = nanos;
    } else if (key === "attributes") {
      attrs = attributes(x, 5);
      if (attrs === undefined) return undefined;
    } else if (key === "asDouble") {
      if (!isFiniteNumber(x)) return undefined;
      asDouble = x;
    } else if (key === "asInt") {
      asInt = int64(x);
      if (asInt === undefined) return undefined;
    } else if (!skipped(x, 5)) return undefined;
  }
  if (time === undefined || (asDouble === undefined) === (asInt === undefined)) return undefined;
  if (reusable(mark, attrs !== undefined)) return v as Point;
  // The common shapes as literals, so that points share one hidden class each.
  if (start === undefined) {
    return asDouble !== undefined
      ? { attributes: attrs ?? [], timeUnixNano: time, asDouble }
      : { attributes: attrs ?? [], timeUnixNano: time, asInt };
  }
  return asDouble !== undefined
    ? { attributes: attrs ?? [], startTimeUnixNano: start, timeUnixNano: time, asDouble }
    : { attributes: attrs ?? [], startTimeUnixNano: start, timeUnixNano: time, asInt };
}

export function fastLogRecord(raw: unknown): LogRecord | undefined {
  startPart();
  if (!isObjectAt(raw, 1)) return undefined;
  const mark = editMark();
  let time: string | undefined;
  let observed: string | undefined;
  let severityNumber: number | undefined;
  let severityText: string | undefined;
  let body: AnyValue | undefined;
  let attrs: KeyValue[] | undefined;
  let dropped: number | undefined;
  let flags: number | undefined;
  let traceId: string | undefined;
  let spanId: string | undefined;
  for (const key in raw) {
    if (!counted()) return undefined;
    const x = raw[key];
    if (key === "timeUnixNano" || key === "observedTimeUnixNano") {
      const nanos = unixNano(x);
      if (nanos === undefined) return undefined;
      if (key === "timeUnixNano") time = nanos;
      else observed = nanos;
    } else if (key === "traceId" || key === "spanId") {
      const id = hexId(x, key === "traceId" ? 32 : 16, true);
      if (id === undefined) return undefined;
      if (key === "traceId") traceId = id;
      else spanId = id;
    } else if (key === "attributes") {
      attrs = attributes(x, 2);
      if (attrs === undefined) return undefined;
    } else if (key === "body") {
      body = anyValue(x, 2);
      if (body === undefined) return undefined;
    } else if (key === "severityNumber") {
      if (!isIntIn(x, 0, 24)) return undefined;
      severityNumber = x;
    } else if (key === "severityText") {
      if (typeof x !== "string") return undefined;
      severityText = x;
    } else if (key === "droppedAttributesCount" || key === "flags") {
      if (!isIntIn(x, 0, MAX)) return undefined;
      if (key === "flags") flags = x;
      else dropped = x;
    } else if (!skipped(x, 2)) return undefined;
  }
  const complete = time !== undefined && severityNumber !== undefined && severityText !== undefined && attrs !== undefined;
  if (reusable(mark, complete && dropped !== undefined && traceId !== undefined && spanId !== undefined)) return raw as LogRecord;
  const record: LogRecord = { timeUnixNano: time ?? "0" } as LogRecord;
  if (observed !== undefined) record.observedTimeUnixNano = observed;
  record.severityNumber = severityNumber ?? 0;
  record.severityText = severityText ?? "";
  if (body !== undefined) record.body = body;
  record.attributes = attrs ?? [];
  record.droppedAttributesCount = dropped ?? 0;
  if (flags !== undefined) record.flags = flags;
  record.traceId = traceId ?? "";
  record.spanId = spanId ?? "";
  return record;
}
