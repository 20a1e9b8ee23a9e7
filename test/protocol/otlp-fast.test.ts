import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { z } from "zod";
import { jsonShapeProblem, MAX_ITEM_VALUES, MAX_JSON_DEPTH } from "../../src/protocol/json-shape.ts";
import { LogRecord, Metric, type OtlpSignal, Resource, Scope, Span } from "../../src/protocol/otlp.ts";
import { fastLogRecord, fastMetric, fastResource, fastScope, fastSpan } from "../../src/protocol/otlp-fast.ts";
import { decodeOtlpProtobuf } from "../../src/protocol/otlp-protobuf.ts";
import { otlpProtoTypes } from "../../src/protocol/otlp-proto-schema.ts";
import { parseExport } from "../../src/protocol/otlp-request.ts";
import { logsRequest, metricsRequest, tracesRequest } from "../helpers/fixtures.ts";
import { parseExportWithZod, parsePart } from "../helpers/otlp-zod-export.ts";
import { exportRequest, logRecord, metric, resource, scope, span } from "./otlp-arbitraries.ts";

// The zod-free fast path (src/protocol/otlp-fast*.ts) must accept exactly what the zod schemas accept, and output
// exactly what they output (the same keys in the same order, -0 kept); parseExport's whole answer (request, counts,
// reasons) must be what the all-zod parseExport answered (test/helpers/otlp-zod-export.ts).

const SEED = process.env.FC_SEED ?? "20261127";
const options = (numRuns: number): fc.Parameters<unknown> => ({ numRuns, ...(SEED === "random" ? {} : { seed: Number(SEED) }) });

/** What zod (behind the same size bound) outputs for a part, or undefined when it refuses it. */
function zodOutput(schema: z.ZodType, raw: unknown): unknown {
  const parsed = parsePart(schema, raw);
  return parsed.success ? parsed.data : undefined;
}

/** Same value, deeply and strictly (-0 is not 0), and the same keys in the same order. */
function assertSame(actual: unknown, expected: unknown): void {
  assert.deepStrictEqual(actual, expected);
  assert.equal(JSON.stringify(actual), JSON.stringify(expected));
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
    test(`${name}: fast accepts iff zod accepts, with the same normalised value`, () => {
      const seen = { accepted: 0, refused: 0 };
      fc.assert(
        fc.property(arb, (raw) => {
          const expected = zodOutput(schema, raw);
          const actual = fast(raw);
          if (expected === undefined) {
            assert.equal(actual, undefined, `fast accepted what zod refuses: ${JSON.stringify(actual)}`);
            seen.refused++;
          } else {
            assert.notEqual(actual, undefined, "fast refused what zod accepts");
            assertSame(actual, expected);
            seen.accepted++;
          }
        }),
        options(2500),
      );
      // The generator is worth something only if it makes plenty of both.
      assert.ok(seen.accepted > 500 && seen.refused > 125, JSON.stringify(seen));
    });
  }

  for (const signal of ["metrics", "traces", "logs"] as OtlpSignal[]) {
    test(`parseExport(${signal}): the same request, counts and reasons as the all-zod parseExport`, () => {
      const seen = { accepted: 0, rejected: 0, thrown: 0 };
      fc.assert(
        fc.property(exportRequest(signal), (raw) => {
          const expected = outcome(() => parseExportWithZod(signal, raw));
          const actual = outcome(() => parseExport(signal, raw));
          assertSame(actual, expected);
          if ("thrown" in expected) seen.thrown++;
          else {
            seen.accepted += expected.result.accepted;
            seen.rejected += expected.result.rejected;
          }
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
      assertSame(parseExport(signal, decoded), parseExportWithZod(signal, decoded));
      fc.assert(
        fc.property(exportRequest(signal), (raw) => {
          const valid = outcome(() => parseExportWithZod(signal, raw));
          if (!("result" in valid)) return;
          const again = decodeOtlpProtobuf(signal, type.encode(type.fromObject(valid.result.request as object)).finish());
          assertSame(parseExport(signal, again), parseExportWithZod(signal, again));
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
      assertSame(parsed, parseExportWithZod("metrics", request));
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
    assertSame(parsed, parseExportWithZod("logs", request));
    assert.deepEqual([parsed.accepted, parsed.rejected], [1, 3]);
    assert.match(parsed.errors.join("\n"), /logRecords\.1: nested too deeply/);
  });

  test("a key present with the value undefined (not JSON; possible in memory) is left to zod, which keeps it", () => {
    const request = { resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: undefined } }, { flags: undefined }] }] }] };
    assertSame(parseExport("logs", request), parseExportWithZod("logs", request));
    assert.equal(fastLogRecord({ body: { stringValue: undefined } }), undefined);
    assert.ok("stringValue" in (parseExport("logs", request).request.resourceLogs[0]!.scopeLogs[0]!.logRecords[0]!.body as object));
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
