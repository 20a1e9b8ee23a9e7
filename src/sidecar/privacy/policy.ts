import { InternalError } from "../../errors.ts";
import type { LogRecord, LogsRequest, Metric, MetricsRequest, Span, TracesRequest } from "../../protocol/otlp.ts";
import { endpointTemplate, looksLikeEndpoint } from "./endpoint-template.ts";
import { allowedAttributes as allowed, scrubBody, scrubMetricName, scrubUnit, scrubVersion } from "./fields.ts";
import { scrubText } from "./scrub.ts";
import { type Position, defaultAllowlist } from "./allowlist.ts";
import { createVocabulary, defaultVocabulary, type Vocabulary } from "./vocabulary.ts";

export { defaultAllowlist } from "./allowlist.ts";

// The allowlist filter between the instance's OTLP exporter and the outbox: only what the policy names
// leaves. Every object that leaves is built field by field, so a field added to the schema later stays
// home until someone decides it may go.

export interface PrivacyPolicy {
  /** Attribute keys allowed to leave, per position (defaults below, extended by config, never by the sender). */
  allow: { resource: ReadonlySet<string>; metrics: ReadonlySet<string>; spans: ReadonlySet<string>; logs: ReadonlySet<string> };
  /** Log records below this severityNumber are dropped: 13 (Warning, default) or 17 (Error). */
  logMinSeverity: number;
  /** Spans that did not fail (status.code 2) and are faster than this (nanoseconds, bigint) are dropped. Default 1 s. */
  slowSpanNanos: bigint;
  /** The words free text may keep (vocabulary.ts): the built-in ones and the operator's `privacy.vocabulary`. */
  vocabulary: Vocabulary;
}

const WARNING = 13;
const DEFAULT_SLOW_SPAN_MS = 1000;

export function privacyPolicy(
  options: { extraAllow?: Partial<Record<Position, string[]>>; logMinSeverity?: number; slowSpanMs?: number; vocabulary?: string[] } = {},
): PrivacyPolicy {
  const logMinSeverity = options.logMinSeverity ?? WARNING;
  const slowSpanMs = options.slowSpanMs ?? DEFAULT_SLOW_SPAN_MS;
  // Config validates these at the edge; a bad value here is a programming error, and a silent 0 would let everything out.
  if (!Number.isInteger(logMinSeverity) || logMinSeverity < 1 || logMinSeverity > 24) {
    throw new InternalError(`logMinSeverity must be an OTLP severityNumber from 1 to 24, got ${logMinSeverity}`);
  }
  if (!Number.isFinite(slowSpanMs) || slowSpanMs < 0) {
    throw new InternalError(`slowSpanMs must be a non-negative number of milliseconds, got ${slowSpanMs}`);
  }
  let vocabulary: Vocabulary | undefined;
  const allow = (position: Position): ReadonlySet<string> =>
    new Set([...defaultAllowlist[position], ...(options.extraAllow?.[position] ?? [])]);
  return {
    allow: { resource: allow("resource"), metrics: allow("metrics"), spans: allow("spans"), logs: allow("logs") },
    logMinSeverity,
    slowSpanNanos: BigInt(Math.round(slowSpanMs * 1_000_000)),
    // Built on first use, not at start: the word sets take tens of milliseconds the listener need not wait for.
    get vocabulary() {
      vocabulary ??= vocabularyFor(options.vocabulary ?? [], Object.values(options.extraAllow ?? {}).flat());
      return vocabulary;
    },
  };
}

/** The built-in vocabulary (built once) unless the operator adds words or attribute keys. */
function vocabularyFor(words: string[], attributeKeys: string[]): Vocabulary {
  return words.length > 0 || attributeKeys.length > 0 ? createVocabulary(words, attributeKeys) : defaultVocabulary();
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
/** The attribute keys allowed at one position, and the words free text may keep. */
type Allow = { keys: ReadonlySet<string>; vocabulary: Vocabulary };
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
      const metricsLeft = metrics.flatMap((metric) =>
        filterMetric(metric, { keys: policy.allow.metrics, vocabulary: policy.vocabulary }, tally),
      );
      if (metricsLeft.length > 0) scopesLeft.push({ ...filterScope(scope, policy.vocabulary, tally), metrics: metricsLeft });
    }
    if (scopesLeft.length > 0) {
      resourceMetrics.push({
        resource: filterResource(resource, { keys: policy.allow.resource, vocabulary: policy.vocabulary }, tally),
        scopeMetrics: scopesLeft,
      });
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
        scopesLeft.push({
          ...filterScope(scope, policy.vocabulary, tally),
          spans: spansLeft.map((span) => filterSpan(span, { keys: policy.allow.spans, vocabulary: policy.vocabulary }, tally)),
        });
      }
    }
    if (scopesLeft.length > 0) {
      resourceSpans.push({
        resource: filterResource(resource, { keys: policy.allow.resource, vocabulary: policy.vocabulary }, tally),
        scopeSpans: scopesLeft,
      });
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
        if (severity >= policy.logMinSeverity)
          recordsLeft.push(filterLogRecord(record, severity, { keys: policy.allow.logs, vocabulary: policy.vocabulary }, tally));
        else tally.droppedItems++;
      }
      tally.kept += recordsLeft.length;
      if (recordsLeft.length > 0) scopesLeft.push({ ...filterScope(scope, policy.vocabulary, tally), logRecords: recordsLeft });
    }
    if (scopesLeft.length > 0) {
      resourceLogs.push({
        resource: filterResource(resource, { keys: policy.allow.resource, vocabulary: policy.vocabulary }, tally),
        scopeLogs: scopesLeft,
      });
    }
  }
  return result({ resourceLogs }, resourceLogs.length, tally);
}

function result<T>(request: T, resources: number, tally: Tally): FilterResult<T> {
  return { request: resources > 0 ? request : null, ...tally };
}

function filterResource(resource: Resource, allow: Allow, tally: Tally): Resource {
  const { attributes, dropped } = allowed(resource.attributes, allow.keys, allow.vocabulary, tally);
  return { attributes, droppedAttributesCount: resource.droppedAttributesCount + dropped };
}

/** Scope attributes describe the instrumentation library, never the platform: none leave. */
function filterScope(scope: Scope | undefined, vocabulary: Vocabulary, tally: Tally): { scope?: Scope } {
  if (scope === undefined) return {};
  tally.droppedAttributes += scope.attributes.length;
  return {
    scope: {
      name: scrubText(scope.name, vocabulary),
      version: scrubVersion(scope.version, vocabulary),
      attributes: [],
      droppedAttributesCount: scope.droppedAttributesCount + scope.attributes.length,
    },
  };
}

// ---- metrics ----

/** The metric with its data points' attributes filtered; no metric when it has no data points to say anything. */
function filterMetric(metric: Metric, allow: Allow, tally: Tally): Metric[] {
  const points = (metric.gauge ?? metric.sum)?.dataPoints ?? [];
  if (points.length === 0) return [];
  const dataPoints = points.map((point) => filterDataPoint(point, allow, tally));
  tally.kept += dataPoints.length;
  // Free text too, from the sender: a name can carry an e-mail ("logins.alice@corp.example"), a unit a password.
  const { vocabulary } = allow;
  const base = {
    name: scrubMetricName(metric.name, vocabulary),
    unit: scrubUnit(metric.unit, vocabulary),
    description: scrubText(metric.description, vocabulary),
  };
  if (metric.sum) {
    const { aggregationTemporality, isMonotonic } = metric.sum;
    return [{ ...base, sum: { dataPoints, aggregationTemporality, isMonotonic } }];
  }
  return [{ ...base, gauge: { dataPoints } }];
}

/** Built field by field (not through withoutUndefined): a request holds thousands of points. */
function filterDataPoint(point: DataPoint, allow: Allow, tally: Tally): DataPoint {
  const out: Partial<DataPoint> = { attributes: allowed(point.attributes, allow.keys, allow.vocabulary, tally).attributes };
  if (point.startTimeUnixNano !== undefined) out.startTimeUnixNano = point.startTimeUnixNano;
  out.timeUnixNano = point.timeUnixNano;
  if (point.asDouble !== undefined) out.asDouble = point.asDouble;
  if (point.asInt !== undefined) out.asInt = point.asInt;
  return out as DataPoint;
}

// ---- traces ----

/** The spans the platform collects: timing and errors of failed or high-latency requests (docs/PROTOCOL.md). */
function isFailedOrSlow(span: Span, slowSpanNanos: bigint): boolean {
  return span.status.code === 2 || BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano) >= slowSpanNanos;
}

function filterSpan(span: Span, allow: Allow, tally: Tally): Span {
  const { attributes, dropped } = allowed(span.attributes, allow.keys, allow.vocabulary, tally);
  return withoutUndefined({
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    flags: span.flags,
    name: looksLikeEndpoint(span.name) ? endpointTemplate(span.name, allow.vocabulary) : scrubText(span.name, allow.vocabulary),
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
      message: span.status.message === undefined ? undefined : scrubText(span.status.message, allow.vocabulary),
      code: span.status.code,
    }),
  });
}

function filterEvent(event: SpanEvent, allow: Allow, tally: Tally): SpanEvent {
  const { attributes, dropped } = allowed(event.attributes, allow.keys, allow.vocabulary, tally);
  return {
    timeUnixNano: event.timeUnixNano,
    name: scrubText(event.name, allow.vocabulary),
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

function filterLogRecord(record: LogRecord, severity: number, allow: Allow, tally: Tally): LogRecord {
  const { attributes, dropped } = allowed(record.attributes, allow.keys, allow.vocabulary, tally);
  return withoutUndefined({
    timeUnixNano: record.timeUnixNano,
    observedTimeUnixNano: record.observedTimeUnixNano,
    severityNumber: severity,
    severityText: scrubText(record.severityText, allow.vocabulary),
    body: scrubBody(record.body, allow.vocabulary),
    attributes,
    droppedAttributesCount: record.droppedAttributesCount + dropped,
    flags: record.flags,
    traceId: record.traceId,
    spanId: record.spanId,
  });
}

/** Optional fields the sender left out stay out, rather than leaving as explicit undefined. */
function withoutUndefined<T extends object>(value: T): T {
  const out: Partial<T> = {};
  for (const key in value) if (value[key] !== undefined) out[key] = value[key];
  return out as T;
}
