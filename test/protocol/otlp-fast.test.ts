import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { z } from "zod";
import { jsonShapeProblem, MAX_ITEM_VALUES, MAX_JSON_DEPTH } from "../../src/protocol/json-shape.ts";
import { LogRecord, Metric, type OtlpSignal, Resource, Scope, Span } from "../../src/protocol/otlp.ts";
import { fastLogRecord, fastMetric, fastResource, fastScope, fastSpan } from "../../src/protocol/otlp-fast.ts";
import { decodeOtlpProtobuf } from "../../src/protocol/otlp-protobuf.ts";
import { otlpProtoTypes } from "../../src/protocol/otlp-proto-schema.ts";
import { type ParsedExport, parseExport } from "../../src/protocol/otlp-request.ts";
import { logsRequest, metricsRequest, tracesRequest } from "../helpers/fixtures.ts";
import { parseExportWithZod, parsePart } from "../helpers/otlp-zod-export.ts";
import { exportRequest, logRecord, metric, resource, scope, span } from "./otlp-arbitraries.ts";

// The zod-free fast path (src/protocol/otlp-fast*.ts) must accept exactly what the zod schemas accept, and output
// exactly what they output (deeply and strictly equal, -0 kept); parseExport's whole answer (request, counts,
// reasons) must be what the all-zod parseExport answered (test/helpers/otlp-zod-export.ts). Where a raw object or
// list already is its normalised form it is the output itself (reused, in the sender's key order), and only then;
// every object built anew has the schema's key order.

const SEED = process.env.FC_SEED ?? "20261127";
const options = (numRuns: number): fc.Parameters<unknown> => ({ numRuns, ...(SEED === "random" ? {} : { seed: Number(SEED) }) });

/** What zod (behind the same size bound) outputs for a part, or undefined when it refuses it. */
function zodOutput(schema: z.ZodType, raw: unknown): unknown {
  const parsed = parsePart(schema, raw);
  return parsed.success ? parsed.data : undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

/**
 * A part's output against zod's and the raw part, level by level (a part's output has the raw part's shape, with
 * defaults added): each object or list is the raw one itself exactly when the raw one already equals zod's output
 * (strictly); any other is a new one, equal to zod's, with zod's key order.
 */
function assertPart(actual: unknown, expected: unknown, raw: unknown, path = "$"): void {
  assert.deepStrictEqual(actual, expected, path);
  if (!isObject(expected)) return;
  if (isDeepStrictEqual(raw, expected)) {
    assert.equal(actual, raw, `${path}: already normalised, yet copied`);
    return;
  }
  assert.notEqual(actual, raw, `${path}: reused, yet not normalised`);
  assert.deepEqual(Object.keys(actual as object), Object.keys(expected), `${path}: the schema's key order`);
  for (const key of Object.keys(expected)) {
    const rawChild = isObject(raw) ? (raw as Record<string, unknown>)[key] : undefined;
    assertPart((actual as Record<string, unknown>)[key], expected[key], rawChild, `${path}.${key}`);
  }
}

/** The objects and lists in a value (without recursion: the depth test's values are thousands deep). */
function nodesIn(value: unknown): object[] {
  const nodes: object[] = isObject(value) ? [value] : [];
  for (let i = 0; i < nodes.length; i++) for (const child of Object.values(nodes[i]!)) if (isObject(child)) nodes.push(child);
  return nodes;
}

/**
 * parseExport's answer against the all-zod one: the same request (deeply, strictly), counts and reasons; every
 * object not the raw request's own has zod's key order; `canonical` exactly when the raw request equals zod's
 * output, and then the request is the raw one.
 */
function assertSameExport(raw: unknown, actual: ParsedExport<unknown>, expected: Omit<ParsedExport<unknown>, "canonical">): void {
  const { canonical, ...rest } = actual;
  assert.deepStrictEqual(rest, expected);
  const reused = new Set(nodesIn(raw));
  const pairs: [unknown, unknown][] = [[actual.request, expected.request]];
  for (const [a, e] of pairs) {
    if (!isObject(a) || reused.has(a)) continue;
    assert.deepEqual(Object.keys(a), Object.keys(e as object), "the schema's key order");
    for (const key of Object.keys(a)) pairs.push([a[key], (e as Record<string, unknown>)[key]]);
  }
  assert.equal(canonical, isDeepStrictEqual(raw, expected.request), "canonical exactly when nothing changed");
  if (canonical) assert.equal(actual.request, raw);
}

/** A deep copy with every object's keys in reverse order (a sender's order is not the schema's). */
function reversedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversedKeys);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([k, v]) => [k, reversedKeys(v)]),
  );
}

const parts = [
  { name: "Resource", fast: fastResource, schema: Resource, arb: resource },
  { name: "Scope", fast: fastScope, schema: Scope, arb: scope },
  { name: "Metric", fast: fastMetric, schema: Metric, arb: metric },
  { name: "Span", fast: fastSpan, schema: Span, arb: span },
  { name: "LogRecord", fast: fastLogRecord, schema: LogRecord, arb: logRecord },
];

describe("OTLP fast path: the same verdict and output as the zod schemas", () => {
  for (const { name, fast, schema, arb } of parts) {
    test(`${name}: fast accepts iff zod accepts, with the same normalised value, reusing exactly what is normalised`, () => {
      const seen = { accepted: 0, refused: 0, reused: 0 };
      fc.assert(
        fc.property(arb, (raw) => {
          const expected = zodOutput(schema, raw);
          const actual = fast(raw);
          if (expected === undefined) {
            assert.equal(actual, undefined, `fast accepted what zod refuses: ${JSON.stringify(actual)}`);
            seen.refused++;
          } else {
            assert.notEqual(actual, undefined, "fast refused what zod accepts");
            assertPart(actual, expected, raw);
            seen.accepted++;
            if (actual === raw) seen.reused++;
          }
        }),
        options(2500),
      );
      // The generator is worth something only if it makes plenty of both.
      assert.ok(seen.accepted > 500 && seen.refused > 125, JSON.stringify(seen));
    });

    test(`${name}: a normalised part, in any key order, is its own output; one edit anywhere in it makes a new one above it`, () => {
      let edited = 0;
      fc.assert(
        fc.property(arb, fc.nat(), fc.constantFrom("unknown key", "key removed", "number for string"), (raw, pick, edit) => {
          const normalised = zodOutput(schema, raw);
          if (normalised === undefined) return;
          const sent = reversedKeys(normalised);
          assert.equal(fast(normalised), normalised);
          assert.equal(fast(sent), sent);
          // One edit at one object of it, somewhere: what zod makes of that, the fast path makes, reusing the rest.
          const objects = nodesIn(sent).filter((n) => !Array.isArray(n)) as Record<string, unknown>[];
          const target = objects[pick % objects.length]!;
          const keys = Object.keys(target);
          const stringKey = keys.find((k) => typeof target[k] === "string" && /^\d+$/.test(target[k] as string));
          if (edit === "unknown key") target.extra = [1, { a: 2 }];
          else if (edit === "key removed" && keys.length > 0) delete target[keys[pick % keys.length]!];
          else if (edit === "number for string" && stringKey) target[stringKey] = Number(target[stringKey]);
          else return;
          edited++;
          const expected = zodOutput(schema, sent);
          const actual = fast(sent);
          if (expected === undefined) assert.equal(actual, undefined);
          else assertPart(actual, expected, sent);
        }),
        options(1000),
      );
      assert.ok(edited > 250, `${edited} edited`);
    });
  }

  for (const signal of ["metrics", "traces", "logs"] as OtlpSignal[]) {
    test(`parseExport(${signal}): the same request, counts and reasons as the all-zod parseExport`, () => {
      const seen = { accepted: 0, rejected: 0, thrown: 0, canonical: 0 };
      fc.assert(
        fc.property(exportRequest(signal), (raw) => {
          const expected = outcome(() => parseExportWithZod(signal, raw));
          const actual = outcome(() => parseExport(signal, raw));
          if ("thrown" in expected || "thrown" in actual) {
            assert.deepStrictEqual(actual, expected);
            seen.thrown++;
            return;
          }
          assertSameExport(raw, actual.result, expected.result);
          seen.accepted += expected.result.accepted;
          seen.rejected += expected.result.rejected;
          // Its normalised request, sent again (as the sidecar sends what it kept): canonical, the very same object.
          const again = parseExport(signal, reversedKeys(expected.result.request));
          assert.ok(again.canonical);
          assertSameExport(again.request, again, { ...expected.result, rejected: 0, errors: [] });
          if (actual.result.canonical) seen.canonical++;
        }),
        options(1500),
      );
      assert.ok(seen.accepted > 1000 && seen.rejected > 1000 && seen.thrown > 10, JSON.stringify(seen));
    });
  }

  test("protobuf-decoded requests, valid ones re-encoded included, parse as the all-zod parseExport parses them", () => {
    const samples = { metrics: metricsRequest, traces: tracesRequest, logs: logsRequest };
    for (const signal of ["metrics", "traces", "logs"] as OtlpSignal[]) {
      const type = otlpProtoTypes.requests[signal];
      const decoded = decodeOtlpProtobuf(signal, type.encode(type.fromObject(samples[signal]())).finish());
      assertSameExport(decoded, parseExport(signal, decoded), parseExportWithZod(signal, decoded));
      fc.assert(
        fc.property(exportRequest(signal), (raw) => {
          const valid = outcome(() => parseExportWithZod(signal, raw));
          if (!("result" in valid)) return;
          const again = decodeOtlpProtobuf(signal, type.encode(type.fromObject(valid.result.request as object)).finish());
          assertSameExport(again, parseExport(signal, again), parseExportWithZod(signal, again));
        }),
        options(300),
      );
    }
  });

  test("the size bound: a part of exactly MAX_ITEM_VALUES values is taken, one more is refused, in known and unknown keys", () => {
    const point = { timeUnixNano: "1", asInt: 1 };
    // Attributes add two values each ({ key }); the unit (one value) evens the count out when it has to.
    const withAttributes = (n: number, unit: boolean) => ({
      name: "m",
      ...(unit ? { unit: "u" } : {}),
      gauge: { dataPoints: [{ ...point, attributes: Array.from({ length: n }, () => ({ key: "k" })) }] },
    });
    const withUnknown = (n: number, unit: boolean) => ({
      name: "m",
      ...(unit ? { unit: "u" } : {}),
      gauge: { dataPoints: [point] },
      extra: new Array(n).fill(0),
    });
    for (const shape of [withAttributes, withUnknown]) {
      const unit = (MAX_ITEM_VALUES - valuesIn(shape(0, false))) % (valuesIn(shape(1, false)) - valuesIn(shape(0, false))) !== 0;
      const make = (n: number) => shape(n, unit);
      const atLimit = (MAX_ITEM_VALUES - valuesIn(make(0))) / (valuesIn(make(1)) - valuesIn(make(0)));
      assert.equal(valuesIn(make(atLimit)), MAX_ITEM_VALUES);
      assert.equal(jsonShapeProblem(make(atLimit), MAX_ITEM_VALUES), undefined);
      assert.equal(jsonShapeProblem(make(atLimit + 1), MAX_ITEM_VALUES), "too_many_values");
      assert.notEqual(fastMetric(make(atLimit)), undefined);
      assert.equal(fastMetric(make(atLimit + 1)), undefined);
      const request = { resourceMetrics: [{ scopeMetrics: [{ metrics: [make(atLimit), make(atLimit + 1)] }] }] };
      const parsed = parseExport("metrics", request);
      assertSameExport(request, parsed, parseExportWithZod("metrics", request));
      assert.deepEqual([parsed.accepted, parsed.rejected], [1, 1]);
      assert.match(parsed.errors[0]!, /metrics\.1: more than 50000 values/);
    }
  });

  test("the depth bound: a value nested to exactly MAX_JSON_DEPTH is taken, one level more is refused, and 5,000 levels are no stack overflow", () => {
    // A log body nested `levels` arrays deep: the record is depth 1, its body 2, each level adds 3 (AnyValue, arrayValue, values).
    const nested = (levels: number, leaf: unknown) => {
      let value: unknown = leaf;
      for (let i = 0; i < levels; i++) value = { arrayValue: { values: [value] } };
      return { body: value };
    };
    // After 20 levels the leaf AnyValue is at depth 62: its arrayValue's values list is at 64, the bound.
    const deepest = nested(20, { arrayValue: { values: [] } });
    const tooDeep = nested(20, { arrayValue: { values: [{}] } });
    const tooDeepUnknown = nested(20, { arrayValue: { values: [], extra: [[]] } });
    assert.equal(MAX_JSON_DEPTH, 64);
    assert.equal(jsonShapeProblem(deepest), undefined);
    assert.equal(jsonShapeProblem(tooDeep), "too_deep");
    assert.equal(jsonShapeProblem(tooDeepUnknown), "too_deep");
    assert.notEqual(fastLogRecord(deepest), undefined);
    assert.equal(fastLogRecord(tooDeep), undefined);
    assert.equal(fastLogRecord(tooDeepUnknown), undefined);
    const request = { resourceLogs: [{ scopeLogs: [{ logRecords: [deepest, tooDeep, tooDeepUnknown, nested(5000, {})] }] }] };
    const parsed = parseExport("logs", request);
    assertSameExport(request, parsed, parseExportWithZod("logs", request));
    assert.deepEqual([parsed.accepted, parsed.rejected], [1, 3]);
    assert.match(parsed.errors.join("\n"), /logRecords\.1: nested too deeply/);
  });

  test("a key present with the value undefined (not JSON; possible in memory) is left to zod, which keeps it", () => {
    const logRecords = [undefined, { body: { stringValue: undefined } }, { flags: undefined }];
    const request = { resourceLogs: [{ scopeLogs: [{ logRecords }] }] };
    assertSameExport(request, parseExport("logs", request), parseExportWithZod("logs", request));
    assert.equal(fastLogRecord({ body: { stringValue: undefined } }), undefined);
    assert.ok("stringValue" in (parseExport("logs", request).request.resourceLogs[0]!.scopeLogs[0]!.logRecords[0]!.body as object));
    assert.equal(parseExport("logs", request).rejected, 1); // an undefined element is rejected, not taken for reused
  });
});

function outcome<T>(run: () => T): { result: T } | { thrown: string } {
  try {
    return { result: run() };
  } catch (err) {
    return { thrown: `${(err as Error).constructor.name}: ${(err as Error).message}` };
  }
}

/** Values in a JSON value as jsonShapeProblem counts them (objects, arrays and scalars). */
function valuesIn(value: unknown): number {
  if (value === null || typeof value !== "object") return 1;
  return 1 + (Object.values(value) as unknown[]).reduce<number>((n, v) => n + valuesIn(v), 0);
}
