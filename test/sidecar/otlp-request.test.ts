import assert from "node:assert/strict";
import { test } from "node:test";
import { OtlpRequestShapeError, parseExport } from "../../src/protocol/otlp-request.ts";
import { metricsRequest, tracesRequest } from "../helpers/fixtures.ts";

test("parseExport: one bad span is rejected alone, with its path and rule, never its value", () => {
  const request = tracesRequest();
  const good = request.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
  request.resourceSpans[0]!.scopeSpans[0]!.spans.push({ ...good, traceId: "secret-looking-value" });
  const parsed = parseExport("traces", request);
  assert.deepEqual([parsed.accepted, parsed.rejected], [1, 1]);
  assert.equal(parsed.request.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.traceId, "5b8efff798038103d269b633813fc60c");
  assert.match(parsed.errors[0]!, /^resourceSpans\.0\.scopeSpans\.0\.spans\.1\.traceId: /);
  assert.ok(!parsed.errors.join().includes("secret-looking-value"));
});

test("parseExport: histograms are rejected by data point count; a bad resource rejects what it holds; empty requests are fine", () => {
  const request = metricsRequest() as any;
  request.resourceMetrics[0].scopeMetrics[0].metrics.push({ name: "h", histogram: { dataPoints: [{}, {}, {}] } });
  request.resourceMetrics.push({
    resource: { attributes: "nope" },
    scopeMetrics: [{ metrics: [request.resourceMetrics[0].scopeMetrics[0].metrics[0]] }],
  });
  const parsed = parseExport("metrics", request);
  assert.deepEqual([parsed.accepted, parsed.rejected], [2, 4]);
  assert.equal(parsed.request.resourceMetrics.length, 1);
  assert.match(parsed.errors.join("\n"), /only gauge and sum/);
  assert.deepEqual(parseExport("logs", {}).request, { resourceLogs: [] });
  assert.throws(() => parseExport("logs", { resourceLogs: {} }), OtlpRequestShapeError);
  assert.throws(() => parseExport("logs", [1, 2]), OtlpRequestShapeError);
});
