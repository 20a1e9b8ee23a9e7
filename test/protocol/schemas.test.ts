import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LogsRequest, MetricsRequest, TracesRequest, otlpSignals } from "../../src/protocol/otlp.ts";
import { IngestTracesRequest, TraceTransaction } from "../../src/protocol/trace-transaction.ts";
import { UsageSnapshot } from "../../src/protocol/usage-snapshot.ts";
import { toValidationErrors } from "../../src/protocol/validation-error.ts";
import { logsRequest, metricsRequest, traceTransaction, tracesRequest, usageMeasures } from "../helpers/fixtures.ts";

describe("trace transaction schema", () => {
  test("accepts the platform's documented shape (docs/PROTOCOL.md), with or without fractional seconds", () => {
    assert.ok(TraceTransaction.safeParse(traceTransaction()).success);
    assert.ok(TraceTransaction.safeParse(traceTransaction({ start_insertion_time: "2026-11-01T09:59:59.123456Z" })).success);
  });

  test("a validation error names the path, never echoes the value (the license may be in it)", () => {
    const input = { license: 12345, trace_transactions: [traceTransaction({ trace_count: -3 })] };
    const result = IngestTracesRequest.safeParse(input);
    assert.ok(!result.success);
    const detail = toValidationErrors(result.error, input, "body");
    assert.deepEqual(
      detail.map((d) => [d.loc, d.type]),
      [
        [["body", "license"], "invalid_type"],
        [["body", "trace_transactions", 0, "trace_count"], "too_small"],
      ],
    );
    assert.ok(!JSON.stringify(detail).includes("12345"));
  });
});

describe("OTLP JSON schemas", () => {
  test("normalise 64-bit integers sent as numbers to strings, and ids to lower-case hex", () => {
    const metrics = metricsRequest() as { resourceMetrics: { scopeMetrics: { metrics: Record<string, any>[] }[] }[] };
    const point = metrics.resourceMetrics[0]!.scopeMetrics[0]!.metrics[1]!.sum.dataPoints[0];
    point.asInt = 3;
    point.timeUnixNano = 1793527210000000000;
    const parsed = MetricsRequest.parse(metrics);
    const out = parsed.resourceMetrics[0]!.scopeMetrics[0]!.metrics[1]!.sum!.dataPoints[0]!;
    assert.equal(out.asInt, "3");
    assert.equal(typeof out.timeUnixNano, "string");
    const span = TracesRequest.parse(tracesRequest()).resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
    assert.equal(span.spanId, "eee19b7ec3c1b174");
  });

  test("keep every 64-bit integer's exact value in its shortest decimal form", () => {
    const cases: [string | number, string][] = [
      ["007", "7"],
      ["-0", "0"],
      ["-12", "-12"],
      ["9007199254740993", "9007199254740993"], // above 2^53: a number would round it
      [42, "42"],
      [-0, "0"],
      [2 ** 63, "9223372036854775808"], // past 2^53: exact as the double it is
      ["18446744073709551615", "18446744073709551615"], // the largest fixed64 (a time in nanoseconds)
      ["-9223372036854775808", "-9223372036854775808"], // the smallest int64
    ];
    for (const [sent, kept] of cases) {
      const metrics = metricsRequest() as any;
      metrics.resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].asInt = sent;
      const parsed = MetricsRequest.parse(metrics);
      assert.equal(parsed.resourceMetrics[0]!.scopeMetrics[0]!.metrics[1]!.sum!.dataPoints[0]!.asInt, kept, `sent ${sent}`);
    }
  });

  test("refuse an integer past 64 bits, however written, before any BigInt is made of it", () => {
    for (const sent of ["18446744073709551616", "-9223372036854775809", 1e21, -1e300, `0${"1".repeat(4_000_000)}`]) {
      const metrics = metricsRequest() as any;
      metrics.resourceMetrics[0].scopeMetrics[0].metrics[1].sum.dataPoints[0].asInt = sent;
      const started = Date.now();
      const result = MetricsRequest.safeParse(metrics);
      assert.ok(!result.success, `sent ${String(sent).slice(0, 30)}`);
      assert.deepEqual(
        result.error.issues.map((i) => i.message),
        ["must fit 64 bits (-2^63 to 2^64-1)"],
      );
      assert.ok(Date.now() - started < 500, "a few milliseconds, not the seconds a 4-million-digit BigInt takes");
    }
  });

  test("fill omitted OTLP defaults and drop unknown fields, as receivers must", () => {
    const parsed = LogsRequest.parse({
      resourceLogs: [
        { scopeLogs: [{ logRecords: [{ timeUnixNano: "1", severityNumber: 17, body: { stringValue: "x" }, vendorField: 1 }] }] },
      ],
    });
    const record = parsed.resourceLogs[0]!.scopeLogs[0]!.logRecords[0]!;
    assert.equal(record.traceId, "");
    assert.deepEqual(record.attributes, []);
    assert.ok(!("vendorField" in record));
  });

  test("refuse a data point with both asDouble and asInt, and a metric with neither gauge nor sum", () => {
    const both = metricsRequest() as any;
    both.resourceMetrics[0].scopeMetrics[0].metrics[0].gauge.dataPoints[0].asInt = "1";
    assert.ok(!MetricsRequest.safeParse(both).success);
    const neither = metricsRequest() as any;
    delete neither.resourceMetrics[0].scopeMetrics[0].metrics[0].gauge;
    assert.ok(!MetricsRequest.safeParse(neither).success);
  });

  test("count data points, spans and log records per request", () => {
    assert.equal(otlpSignals.metrics.countItems(MetricsRequest.parse(metricsRequest())), 2);
    assert.equal(otlpSignals.traces.countItems(TracesRequest.parse(tracesRequest())), 1);
    assert.equal(otlpSignals.logs.countItems(LogsRequest.parse(logsRequest())), 1);
  });
});

describe("usage snapshot schema", () => {
  test("takes timestamps with a UTC offset and exactly the documented measures", () => {
    const snapshot = {
      license_key: "k",
      from_timestamp: "2026-11-01T00:00:00+00:00",
      to_timestamp: "2026-11-02T00:00:00Z",
      measures: usageMeasures(),
    };
    assert.ok(UsageSnapshot.safeParse(snapshot).success);
    assert.ok(!UsageSnapshot.safeParse({ ...snapshot, from_timestamp: "2026-11-01" }).success);
    assert.ok(!UsageSnapshot.safeParse({ ...snapshot, measures: { ...usageMeasures(), users: 1.5 } }).success);
  });
});
