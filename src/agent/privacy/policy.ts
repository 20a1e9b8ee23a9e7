import type { AnyValue, KeyValue, LogRecord, LogsRequest, Metric, MetricsRequest, Span, TracesRequest } from "../../protocol/otlp.ts";
import { endpointTemplate, looksLikeEndpoint } from "./endpoint-template.ts";
import { scrubText } from "./scrub.ts";

// The allowlist filter between the instance's OTLP exporter and the outbox: only what the policy names
// leaves. Every object that leaves is built field by field, so a field added to the schema later stays
// home until someone decides it may go.

type Position = "resource" | "metrics" | "spans" | "logs";

export interface PrivacyPolicy {
  /** Attribute keys allowed to leave, per position (defaults below, extended by config, never by the sender). */
  allow: { resource: ReadonlySet<string>; metrics: ReadonlySet<string>; spans: ReadonlySet<string>; logs: ReadonlySet<string> };
  /** Log records below this severityNumber are dropped: 13 (Warning, default) or 17 (Error). */
  logMinSeverity: number;
  /** Spans that did not fail (status.code 2) and are faster than this (nanoseconds, bigint) are dropped. Default 1 s. */
  slowSpanNanos: bigint;
}

/**
 * The attribute keys the platform collects (docs/PROTOCOL.md, "What operational telemetry carries"). Frozen:
 * widening it is a config decision, not a side effect.
 */
export const defaultAllowlist: Readonly<Record<Position, readonly string[]>> = Object.freeze({
  resource: Object.freeze(["resource.name", "env", "service.name"]),
  metrics: Object.freeze(["endpoint", "method", "service_name"]),
  spans: Object.freeze(["endpoint", "method", "service_name"]),
  logs: Object.freeze(["component", "pool_size", "error_type"]),
});

const WARNING = 13;
const DEFAULT_SLOW_SPAN_MS = 1000;

export function privacyPolicy(
  options: { extraAllow?: Partial<Record<Position, string[]>>; logMinSeverity?: number; slowSpanMs?: number } = {},
): PrivacyPolicy {
  const logMinSeverity = options.logMinSeverity ?? WARNING;
  const slowSpanMs = options.slowSpanMs ?? DEFAULT_SLOW_SPAN_MS;
  // Config validates these at the edge; a bad value here is a programming error, and a silent 0 would let everything out.
  if (!Number.isInteger(logMinSeverity) || logMinSeverity < 1 || logMinSeverity > 24) {
    throw new RangeError(`logMinSeverity must be an OTLP severityNumber from 1 to 24, got ${logMinSeverity}`);
  }
  if (!Number.isFinite(slowSpanMs) || slowSpanMs < 0) {
    throw new RangeError(`slowSpanMs must be a non-negative number of milliseconds, got ${slowSpanMs}`);
  }
  const allow = (position: Position): ReadonlySet<string> =>
    new Set([...defaultAllowlist[position], ...(options.extraAllow?.[position] ?? [])]);
  return {
    allow: { resource: allow("resource"), metrics: allow("metrics"), spans: allow("spans"), logs: allow("logs") },
    logMinSeverity,
    slowSpanNanos: BigInt(Math.round(slowSpanMs * 1_000_000)),
  };
}

export interface FilterResult<T> {
  /** What may leave; null when nothing is left. */
  request: T | null;
  /**
   * Items (data points, spans, log records) kept / dropped by policy, and attributes dropped. Attributes are
   * counted on what leaves only: an item dropped whole counts once, in droppedItems.
   */
  kept: number;
  droppedItems: number;
  droppedAttributes: number;
}

type Tally = Omit<FilterResult<unknown>, "request">;
type Resource = MetricsRequest["resourceMetrics"][number]["resource"];
type Scope = NonNullable<MetricsRequest["resourceMetrics"][number]["scopeMetrics"][number]["scope"]>;
type DataPoint = NonNullable<Metric["gauge"]>["dataPoints"][number];
type SpanEvent = Span["events"][number];

export function filterMetrics(request: MetricsRequest, policy: PrivacyPolicy): FilterResult<MetricsRequest> {
  const tally: Tally = { kept: 0, droppedItems: 0, droppedAttributes: 0 };
  const resourceMetrics: MetricsRequest["resourceMetrics"] = [];
  for (const { resource, scopeMetrics } of request.resourceMetrics) {
    const scopesLeft: MetricsRequest["resourceMetrics"][number]["scopeMetrics"] = [];
    for (const { scope, metrics } of scopeMetrics) {
      const metricsLeft = metrics.flatMap((metric) => filterMetric(metric, policy.allow.metrics, tally));
      if (metricsLeft.length > 0) scopesLeft.push({ ...filterScope(scope, tally), metrics: metricsLeft });
    }
    if (scopesLeft.length > 0) {
      resourceMetrics.push({ resource: filterResource(resource, policy.allow.resource, tally), scopeMetrics: scopesLeft });
    }
  }
  return result({ resourceMetrics }, resourceMetrics.length, tally);
}

export function filterTraces(request: TracesRequest, policy: PrivacyPolicy): FilterResult<TracesRequest> {
  const tally: Tally = { kept: 0, droppedItems: 0, droppedAttributes: 0 };
  const resourceSpans: TracesRequest["resourceSpans"] = [];
  for (const { resource, scopeSpans } of request.resourceSpans) {
    const scopesLeft: TracesRequest["resourceSpans"][number]["scopeSpans"] = [];
    for (const { scope, spans } of scopeSpans) {
      const spansLeft = spans.filter((span) => isFailedOrSlow(span, policy.slowSpanNanos));
      tally.droppedItems += spans.length - spansLeft.length;
      tally.kept += spansLeft.length;
      if (spansLeft.length > 0) {
        scopesLeft.push({ ...filterScope(scope, tally), spans: spansLeft.map((span) => filterSpan(span, policy.allow.spans, tally)) });
      }
    }
    if (scopesLeft.length > 0) {
      resourceSpans.push({ resource: filterResource(resource, policy.allow.resource, tally), scopeSpans: scopesLeft });
    }
  }
  return result({ resourceSpans }, resourceSpans.length, tally);
}

export function filterLogs(request: LogsRequest, policy: PrivacyPolicy): FilterResult<LogsRequest> {
  const tally: Tally = { kept: 0, droppedItems: 0, droppedAttributes: 0 };
  const resourceLogs: LogsRequest["resourceLogs"] = [];
  for (const { resource, scopeLogs } of request.resourceLogs) {
    const scopesLeft: LogsRequest["resourceLogs"][number]["scopeLogs"] = [];
    for (const { scope, logRecords } of scopeLogs) {
      const recordsLeft: LogRecord[] = [];
      for (const record of logRecords) {
        const severity = effectiveSeverity(record);
        if (severity >= policy.logMinSeverity) recordsLeft.push(filterLogRecord(record, severity, policy.allow.logs, tally));
        else tally.droppedItems++;
      }
      tally.kept += recordsLeft.length;
      if (recordsLeft.length > 0) scopesLeft.push({ ...filterScope(scope, tally), logRecords: recordsLeft });
    }
    if (scopesLeft.length > 0) {
      resourceLogs.push({ resource: filterResource(resource, policy.allow.resource, tally), scopeLogs: scopesLeft });
    }
  }
  return result({ resourceLogs }, resourceLogs.length, tally);
}

function result<T>(request: T, resources: number, tally: Tally): FilterResult<T> {
  return { request: resources > 0 ? request : null, ...tally };
}

// ---- attributes ----

function allowedAttributes(attributes: readonly KeyValue[], allow: ReadonlySet<string>, tally: Tally) {
  const kept: KeyValue[] = [];
  for (const { key, value } of attributes) {
    const scalar = allow.has(key) ? scalarValue(key, value) : undefined;
    if (scalar) kept.push({ key, value: scalar });
  }
  const dropped = attributes.length - kept.length;
  tally.droppedAttributes += dropped;
  return { attributes: kept, dropped };
}

/** A copy holding only the scalar, scrubbed; undefined for structured or empty values, which cannot be vetted. */
function scalarValue(key: string, value: AnyValue): AnyValue | undefined {
  if (value.arrayValue !== undefined || value.kvlistValue !== undefined || value.bytesValue !== undefined) return undefined;
  if (value.stringValue !== undefined) {
    return { stringValue: key === "endpoint" ? endpointTemplate(value.stringValue) : scrubText(value.stringValue) };
  }
  if (value.intValue !== undefined) return { intValue: value.intValue };
  if (value.boolValue !== undefined) return { boolValue: value.boolValue };
  if (value.doubleValue !== undefined) return { doubleValue: value.doubleValue };
  return undefined;
}

function filterResource(resource: Resource, allow: ReadonlySet<string>, tally: Tally): Resource {
  const { attributes, dropped } = allowedAttributes(resource.attributes, allow, tally);
  return { attributes, droppedAttributesCount: resource.droppedAttributesCount + dropped };
}

/** Scope attributes describe the instrumentation library, never the platform: none leave. */
function filterScope(scope: Scope | undefined, tally: Tally): { scope?: Scope } {
  if (scope === undefined) return {};
  tally.droppedAttributes += scope.attributes.length;
  return {
    scope: {
      name: scrubText(scope.name),
      version: scrubText(scope.version),
      attributes: [],
      droppedAttributesCount: scope.droppedAttributesCount + scope.attributes.length,
    },
  };
}

// ---- metrics ----

/** The metric with its data points' attributes filtered; no metric when it has no data points to say anything. */
function filterMetric(metric: Metric, allow: ReadonlySet<string>, tally: Tally): Metric[] {
  const points = (metric.gauge ?? metric.sum)?.dataPoints ?? [];
  if (points.length === 0) return [];
  const dataPoints = points.map((point) => filterDataPoint(point, allow, tally));
  tally.kept += dataPoints.length;
  // Free text too, from the sender: a name can carry an e-mail ("logins.alice@corp.example"), a unit a password.
  const base = { name: scrubText(metric.name), unit: scrubText(metric.unit), description: scrubText(metric.description) };
  if (metric.sum) {
    const { aggregationTemporality, isMonotonic } = metric.sum;
    return [{ ...base, sum: { dataPoints, aggregationTemporality, isMonotonic } }];
  }
  return [{ ...base, gauge: { dataPoints } }];
}

function filterDataPoint(point: DataPoint, allow: ReadonlySet<string>, tally: Tally): DataPoint {
  return withoutUndefined({
    attributes: allowedAttributes(point.attributes, allow, tally).attributes,
    startTimeUnixNano: point.startTimeUnixNano,
    timeUnixNano: point.timeUnixNano,
    asDouble: point.asDouble,
    asInt: point.asInt,
  });
}

// ---- traces ----

/** The spans the platform collects: timing and errors of failed or high-latency requests (docs/PROTOCOL.md). */
function isFailedOrSlow(span: Span, slowSpanNanos: bigint): boolean {
  return span.status.code === 2 || BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano) >= slowSpanNanos;
}

function filterSpan(span: Span, allow: ReadonlySet<string>, tally: Tally): Span {
  const { attributes, dropped } = allowedAttributes(span.attributes, allow, tally);
  return withoutUndefined({
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    flags: span.flags,
    name: looksLikeEndpoint(span.name) ? endpointTemplate(span.name) : scrubText(span.name),
    kind: span.kind,
    startTimeUnixNano: span.startTimeUnixNano,
    endTimeUnixNano: span.endTimeUnixNano,
    attributes,
    droppedAttributesCount: span.droppedAttributesCount + dropped,
    events: span.events.map((event) => filterEvent(event, allow, tally)),
    droppedEventsCount: span.droppedEventsCount,
    // Links point into other traces, possibly customers': they never leave, only their number does.
    links: [],
    droppedLinksCount: span.droppedLinksCount + span.links.length,
    status: withoutUndefined({
      message: span.status.message === undefined ? undefined : scrubText(span.status.message),
      code: span.status.code,
    }),
  });
}

function filterEvent(event: SpanEvent, allow: ReadonlySet<string>, tally: Tally): SpanEvent {
  const { attributes, dropped } = allowedAttributes(event.attributes, allow, tally);
  return {
    timeUnixNano: event.timeUnixNano,
    name: scrubText(event.name),
    attributes,
    droppedAttributesCount: event.droppedAttributesCount + dropped,
  };
}

// ---- logs ----

const severityByText: ReadonlyMap<string, number> = new Map([
  ["warn", 13],
  ["warning", 13],
  ["error", 17],
  ["fatal", 21],
  ["critical", 21],
]);

/** severityNumber, or when the sender left it 0 (unspecified), the number its severityText names; 0 when unknown. */
function effectiveSeverity(record: LogRecord): number {
  if (record.severityNumber !== 0) return record.severityNumber;
  return severityByText.get(record.severityText.trim().toLowerCase()) ?? 0;
}

function filterLogRecord(record: LogRecord, severity: number, allow: ReadonlySet<string>, tally: Tally): LogRecord {
  const { attributes, dropped } = allowedAttributes(record.attributes, allow, tally);
  return withoutUndefined({
    timeUnixNano: record.timeUnixNano,
    observedTimeUnixNano: record.observedTimeUnixNano,
    severityNumber: severity,
    severityText: scrubText(record.severityText),
    body: scrubBody(record.body),
    attributes,
    droppedAttributesCount: record.droppedAttributesCount + dropped,
    flags: record.flags,
    traceId: record.traceId,
    spanId: record.spanId,
  });
}

/** Bodies leave as scrubbed text; a structured body cannot be vetted key by key, so only the fact of it leaves. */
function scrubBody(body: AnyValue | undefined): AnyValue {
  if (body === undefined) return { stringValue: "" };
  if (body.arrayValue !== undefined || body.kvlistValue !== undefined || body.bytesValue !== undefined) {
    return { stringValue: "[structured body removed]" };
  }
  if (body.stringValue !== undefined) return { stringValue: scrubText(body.stringValue) };
  if (body.boolValue !== undefined) return { stringValue: String(body.boolValue) };
  if (body.intValue !== undefined) return { stringValue: body.intValue };
  if (body.doubleValue !== undefined) return { stringValue: String(body.doubleValue) };
  return { stringValue: "" };
}

/** Optional fields the sender left out stay out, rather than leaving as explicit undefined. */
function withoutUndefined<T extends object>(value: T): T {
  const out: Partial<T> = {};
  for (const key in value) if (value[key] !== undefined) out[key] = value[key];
  return out as T;
}
