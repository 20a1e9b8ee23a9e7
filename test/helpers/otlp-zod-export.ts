/**
 * The all-zod parseExport as it was before the fast path (src/protocol/otlp-fast.ts): the oracle the equivalence
 * test (test/protocol/otlp-fast.test.ts) compares the product's parseExport with. Test-only; not to be changed
 * with the product, only with the schema's behaviour.
 */
import type { z } from "zod";
import { isRecord } from "../../src/protocol/common.ts";
import { jsonShapeProblem, MAX_ITEM_VALUES } from "../../src/protocol/json-shape.ts";
import { LogRecord, Metric, otlpSignals, Resource, Scope, Span, type OtlpSignal } from "../../src/protocol/otlp.ts";
import { OtlpRequestShapeError, type ParsedExport } from "../../src/protocol/otlp-request.ts";

interface Shape {
  item: z.ZodType;
  /** Items a raw (unvalidated) entry stands for, to report how many were rejected. */
  countRaw(item: unknown): number;
  countValid(item: unknown): number;
}

const unsupportedMetricTypes = ["histogram", "exponentialHistogram", "summary"];

function metricPoints(metric: unknown): number {
  if (!isRecord(metric)) return 1;
  for (const key of ["gauge", "sum", ...unsupportedMetricTypes]) {
    const points = isRecord(metric[key]) ? (metric[key] as { dataPoints?: unknown }).dataPoints : undefined;
    if (Array.isArray(points)) return Math.max(points.length, 1);
  }
  return 1;
}

const one = () => 1;
const shapes: Record<OtlpSignal, Shape> = {
  metrics: { item: Metric, countRaw: metricPoints, countValid: (m) => ((m as Metric).gauge ?? (m as Metric).sum)!.dataPoints.length },
  traces: { item: Span, countRaw: one, countValid: one },
  logs: { item: LogRecord, countRaw: one, countValid: one },
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
export function parsePart<S extends z.ZodType>(schema: S, raw: unknown): Parsed<z.output<S>> {
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

/** parseExport, every part through zod. */
export function parseExportWithZod(signal: OtlpSignal, raw: unknown): Omit<ParsedExport<unknown>, "canonical"> {
  const shape = { ...shapes[signal], ...otlpSignals[signal].fields };
  if (!isRecord(raw)) throw new OtlpRequestShapeError("the body must be an OTLP export request object");
  const result = { accepted: 0, rejected: 0, errors: [] as string[] };
  const reject = (count: number, reason: string) => {
    result.rejected += count;
    if (result.errors.length < MAX_ERRORS) result.errors.push(reason);
  };
  const resources: unknown[] = [];
  for (const [r, rawResource] of listAt(raw, shape.resources, "").entries()) {
    const where = `${shape.resources}.${r}`;
    if (!isRecord(rawResource)) {
      reject(1, `${where}: must be an object`);
      continue;
    }
    const rawScopes = listAt(rawResource, shape.scopes, `${where}.`);
    const resource = parsePart(Resource, rawResource.resource ?? {});
    const scopes: unknown[] = [];
    for (const [s, rawScope] of rawScopes.entries()) {
      const scopeWhere = `${where}.${shape.scopes}.${s}`;
      const rawItems = isRecord(rawScope) ? listAt(rawScope, shape.items, `${scopeWhere}.`) : [];
      const rawCount = rawItems.reduce<number>((n, item) => n + shape.countRaw(item), 0);
      if (!resource.success) {
        reject(rawCount, resource.reason(`${where}.resource`));
        continue;
      }
      if (!isRecord(rawScope)) {
        reject(1, `${scopeWhere}: must be an object`);
        continue;
      }
      const scope = rawScope.scope === undefined || rawScope.scope === null ? undefined : parsePart(Scope, rawScope.scope);
      if (scope && !scope.success) {
        reject(rawCount, scope.reason(`${scopeWhere}.scope`));
        continue;
      }
      const items: unknown[] = [];
      rawItems.forEach((rawItem, i) => {
        const item = parsePart(shape.item, rawItem);
        const itemWhere = `${scopeWhere}.${shape.items}.${i}`;
        if (item.success) {
          items.push(item.data);
          result.accepted += shape.countValid(item.data);
        } else if (isRecord(rawItem) && unsupportedMetricTypes.some((t) => rawItem[t] !== undefined)) {
          reject(shape.countRaw(rawItem), `${itemWhere}: only gauge and sum metrics are forwarded`);
        } else {
          reject(shape.countRaw(rawItem), item.reason(itemWhere));
        }
      });
      if (items.length > 0) scopes.push({ ...(scope ? { scope: scope.data } : {}), [shape.items]: items });
    }
    if (scopes.length > 0 && resource.success) resources.push({ resource: resource.data, [shape.scopes]: scopes });
  }
  return { request: { [shape.resources]: resources }, ...result };
}
