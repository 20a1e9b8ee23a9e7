import type { z } from "zod";
import { isRecord } from "./common.ts";
import { jsonShapeProblem, MAX_ITEM_VALUES } from "./json-shape.ts";
import {
  LogRecord,
  Metric,
  otlpSignals,
  Resource,
  Scope,
  Span,
  type LogsRequest,
  type MetricsRequest,
  type OtlpSignal,
  type TracesRequest,
} from "./otlp.ts";
import { fastLogRecord, fastMetric, fastResource, fastScope, fastSpan } from "./otlp-fast.ts";
import { nextOutput } from "./otlp-fast-values.ts";

/** The body is not an export request at all (not an object, or its top-level list is not a list): 400. */
export class OtlpRequestShapeError extends Error {}

export interface ParsedExport<T> {
  /** The valid part of the request, normalised. */
  request: T;
  /** Items (data points, spans, log records) in the valid part. */
  accepted: number;
  /** Items refused as invalid; the OTLP answer reports them as a partial success. */
  rejected: number;
  /** The first few reasons, for the partial-success message (paths and rules, never values). */
  errors: string[];
  /**
   * The request is its own normalised form (`request` is the raw request itself): nothing refused, nothing dropped,
   * no default filled in, no value normalised. Its JSON text, as received, can stand for `request`.
   */
  canonical: boolean;
}

interface Shape {
  item: z.ZodType;
  /** The item's fast path (otlp-fast.ts): the value the schema would output, or undefined to ask the schema. */
  fast(raw: unknown): unknown;
  /** Items a raw (unvalidated) entry stands for, to report how many were rejected. */
  countRaw(item: unknown): number;
  countValid(item: unknown): number;
}

const unsupportedMetricTypes = ["histogram", "exponentialHistogram", "summary"];
const metricTypes = ["gauge", "sum", ...unsupportedMetricTypes];

function metricPoints(metric: unknown): number {
  if (!isRecord(metric)) return 1;
  for (const key of metricTypes) {
    const points = isRecord(metric[key]) ? (metric[key] as { dataPoints?: unknown }).dataPoints : undefined;
    if (Array.isArray(points)) return Math.max(points.length, 1);
  }
  return 1;
}

const one = () => 1;
const shapes: Record<OtlpSignal, Shape> = {
  metrics: {
    item: Metric,
    fast: fastMetric,
    countRaw: metricPoints,
    countValid: (m) => ((m as Metric).gauge ?? (m as Metric).sum)!.dataPoints.length,
  },
  traces: { item: Span, fast: fastSpan, countRaw: one, countValid: one },
  logs: { item: LogRecord, fast: fastLogRecord, countRaw: one, countValid: one },
};

const MAX_ERRORS = 3;

function listAt(parent: Record<string, unknown>, key: string, where: string): unknown[] {
  const value = parent[key];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new OtlpRequestShapeError(`${where}${key}: must be a list`);
  return value;
}

type Parsed<T> = { success: true; data: T } | { success: false; reason: (path: string) => string };

/**
 * safeParse, bounded: a part too deep or too large is refused before zod sees it (zod would overflow the stack,
 * or make an issue per bad value until the heap is gone), and so is one whose issue list overflows the stack.
 */
function parsePart<S extends z.ZodType>(schema: S, raw: unknown): Parsed<z.output<S>> {
  const problem = jsonShapeProblem(raw, MAX_ITEM_VALUES);
  if (problem) {
    return {
      success: false,
      reason: (path) => `${path}: ${problem === "too_deep" ? "nested too deeply" : `more than ${MAX_ITEM_VALUES} values`}`,
    };
  }
  let result: z.ZodSafeParseResult<z.output<S>>;
  try {
    result = schema.safeParse(raw);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    return { success: false, reason: (path) => `${path}: too many invalid values` };
  }
  if (result.success) return result;
  const issue = result.error.issues[0]!;
  return { success: false, reason: (path) => `${[path, ...issue.path.map(String)].join(".")}: ${issue.message}` };
}

/**
 * The fast path's value when it has one; zod's verdict only for a part the fast path refuses, so that the reason
 * (and the rare part the fast path is stricter on) is exactly the schema's.
 */
function parseFast<S extends z.ZodType>(fast: (raw: unknown) => unknown, schema: S, raw: unknown): Parsed<z.output<S>> {
  const data = fast(raw);
  return data === undefined ? parsePart(schema, raw) : { success: true, data: data as z.output<S> };
}

/** Whether `raw`'s keys are among `a` and `b` (nothing a reused entry would carry that the schema drops). */
function onlyKeys(raw: Record<string, unknown>, a: string, b: string): boolean {
  for (const key in raw) if (key !== a && key !== b) return false;
  return true;
}

type Fields = (typeof otlpSignals)[OtlpSignal]["fields"];
type Result = Omit<ParsedExport<unknown>, "request" | "canonical">;

/**
 * Parses an OTLP export request item by item, so that one bad span or data point is rejected alone (a
 * partial success) rather than failing the whole request. Metrics other than gauge and sum (histograms,
 * summaries) are rejected too: the beacon's shapes have no place for them. What is already in normalised form
 * (a list, an entry, an item, down to one attribute) is not copied: the output holds the raw object itself.
 */
export function parseExport(signal: "metrics", raw: unknown): ParsedExport<MetricsRequest>;
export function parseExport(signal: "traces", raw: unknown): ParsedExport<TracesRequest>;
export function parseExport(signal: "logs", raw: unknown): ParsedExport<LogsRequest>;
export function parseExport(signal: OtlpSignal, raw: unknown): ParsedExport<MetricsRequest | TracesRequest | LogsRequest>;
export function parseExport(signal: OtlpSignal, raw: unknown): ParsedExport<unknown> {
  const shape = { ...shapes[signal], ...otlpSignals[signal].fields };
  if (!isRecord(raw)) throw new OtlpRequestShapeError("the body must be an OTLP export request object");
  const result: Result = { accepted: 0, rejected: 0, errors: [] };
  const rawResources = listAt(raw, shape.resources, "");
  let resources: unknown[] | undefined;
  for (let r = 0; r < rawResources.length; r++) {
    const rawResource = rawResources[r];
    const where = `${shape.resources}.${r}`;
    if (!isRecord(rawResource)) {
      reject(result, 1, `${where}: must be an object`);
      resources = nextOutput(resources, rawResources, r, undefined);
      continue;
    }
    const rawScopes = listAt(rawResource, shape.scopes, `${where}.`);
    const resource = parseFast(fastResource, Resource, rawResource.resource ?? {});
    const scopes = parseScopes(shape, result, rawScopes, resource, where);
    let entry: unknown;
    if (scopes.length > 0 && resource.success) {
      const same = scopes === rawScopes && resource.data === rawResource.resource && onlyKeys(rawResource, "resource", shape.scopes);
      entry = same ? rawResource : { resource: resource.data, [shape.scopes]: scopes };
    }
    resources = nextOutput(resources, rawResources, r, entry);
  }
  const canonical = resources === undefined && raw[shape.resources] === rawResources && onlyKeys(raw, shape.resources, shape.resources);
  return { request: canonical ? raw : { [shape.resources]: resources ?? rawResources }, ...result, canonical };
}

function reject(result: Result, count: number, reason: string): void {
  result.rejected += count;
  if (result.errors.length < MAX_ERRORS) result.errors.push(reason);
}

/** One resource's scope entries, each with its valid items; the raw list itself when every entry is unchanged. */
function parseScopes(shape: Shape & Fields, result: Result, rawScopes: unknown[], resource: Parsed<unknown>, where: string): unknown[] {
  let scopes: unknown[] | undefined;
  for (let s = 0; s < rawScopes.length; s++) {
    const rawScope = rawScopes[s];
    const scopeWhere = `${where}.${shape.scopes}.${s}`;
    const rawItems = isRecord(rawScope) ? listAt(rawScope, shape.items, `${scopeWhere}.`) : [];
    // Counted only to report a rejection: counting every request's items would cost the hot path.
    const rawCount = () => rawItems.reduce<number>((n, item) => n + shape.countRaw(item), 0);
    let entry: unknown;
    if (!resource.success) reject(result, rawCount(), resource.reason(`${where}.resource`));
    else if (!isRecord(rawScope)) reject(result, 1, `${scopeWhere}: must be an object`);
    else {
      const scope = rawScope.scope === undefined || rawScope.scope === null ? undefined : parseFast(fastScope, Scope, rawScope.scope);
      if (scope && !scope.success) reject(result, rawCount(), scope.reason(`${scopeWhere}.scope`));
      else {
        const items = parseItems(shape, result, rawItems, scopeWhere);
        const same = items === rawItems && (scope ? scope.data === rawScope.scope : !("scope" in rawScope));
        if (items.length > 0) {
          entry =
            same && onlyKeys(rawScope, "scope", shape.items) ? rawScope : { ...(scope ? { scope: scope.data } : {}), [shape.items]: items };
        }
      }
    }
    scopes = nextOutput(scopes, rawScopes, s, entry);
  }
  return scopes ?? rawScopes;
}

/** One scope's valid items; the raw list itself when every item is valid and unchanged. */
function parseItems(shape: Shape & Fields, result: Result, rawItems: unknown[], scopeWhere: string): unknown[] {
  let items: unknown[] | undefined;
  for (let i = 0; i < rawItems.length; i++) {
    const rawItem = rawItems[i];
    // The fast path's value itself, not wrapped (parseFast): no allocation per item for one that is reused.
    let data = shape.fast(rawItem);
    if (data === undefined) {
      const item = parsePart(shape.item, rawItem);
      if (item.success) data = item.data;
      else {
        const itemWhere = `${scopeWhere}.${shape.items}.${i}`;
        if (isRecord(rawItem) && unsupportedMetricTypes.some((t) => rawItem[t] !== undefined)) {
          reject(result, shape.countRaw(rawItem), `${itemWhere}: only gauge and sum metrics are forwarded`);
        } else {
          reject(result, shape.countRaw(rawItem), item.reason(itemWhere));
        }
      }
    }
    if (data !== undefined) result.accepted += shape.countValid(data);
    items = nextOutput(items, rawItems, i, data);
  }
  return items ?? rawItems;
}
