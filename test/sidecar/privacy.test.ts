import assert from "node:assert/strict";
import { test } from "node:test";
import { defaultAllowlist, filterLogs, filterMetrics, filterTraces, privacyPolicy } from "../../src/sidecar/privacy/policy.ts";
import { LogsRequest, MetricsRequest, TracesRequest } from "../../src/protocol/otlp.ts";
import { logsRequest, metricsRequest, tracesRequest } from "../helpers/fixtures.ts";

const policy = privacyPolicy({});
const SECOND = 1_000_000_000n;
const T0 = 1_793_000_000n * SECOND;

const str = (key: string, stringValue: string) => ({ key, value: { stringValue } });
const keysOf = (attributes: { key: string }[]) => attributes.map((a) => a.key);

/** Attributes for every position: the allowlisted keys plus what a chatty instrumentation adds. */
const noisy = (allowed: string[]) => [
  ...allowed.map((key) => str(key, `${key}-value`)),
  str("user.email", "jane@example.com"),
  str("http.url", "https://h/x?token=abc"),
  { key: "db.rows", value: { intValue: "7" } },
];

function span(name: string, seconds: bigint, statusCode?: number, extra: Record<string, unknown> = {}) {
  return {
    traceId: "5B8EFFF798038103D269B633813FC60C",
    spanId: "EEE19B7EC3C1B174",
    name,
    startTimeUnixNano: T0.toString(),
    endTimeUnixNano: (T0 + seconds).toString(),
    status: statusCode === undefined ? {} : { code: statusCode },
    ...extra,
  };
}
const traces = (...spans: object[]) => TracesRequest.parse({ resourceSpans: [{ resource: {}, scopeSpans: [{ scope: {}, spans }] }] });

function log(severityNumber: number, severityText: string, body: unknown = { stringValue: "m" }) {
  return { timeUnixNano: T0.toString(), severityNumber, severityText, body };
}
const logs = (...logRecords: object[]) => LogsRequest.parse({ resourceLogs: [{ resource: {}, scopeLogs: [{ scope: {}, logRecords }] }] });

test("the platform's documented sample requests leave unchanged: they carry only what the policy allows", () => {
  const metrics = MetricsRequest.parse(metricsRequest());
  assert.deepEqual(filterMetrics(metrics, policy), { request: metrics, kept: 2, droppedItems: 0, droppedAttributes: 0 });
  const spans = TracesRequest.parse(tracesRequest());
  assert.deepEqual(filterTraces(spans, policy), { request: spans, kept: 1, droppedItems: 0, droppedAttributes: 0 });
  const records = LogsRequest.parse(logsRequest());
  assert.deepEqual(filterLogs(records, policy), { request: records, kept: 1, droppedItems: 0, droppedAttributes: 0 });
});

test("metrics: only allowlisted keys leave, in every position, and every dropped attribute is counted", () => {
  const input = MetricsRequest.parse({
    resourceMetrics: [
      {
        resource: { attributes: noisy(["resource.name", "env"]), droppedAttributesCount: 1 },
        scopeMetrics: [
          {
            scope: { name: "platform", version: "1.0", attributes: [str("library.secret", "x")] },
            metrics: [
              { name: "latency", gauge: { dataPoints: [{ asDouble: 1, timeUnixNano: "1", attributes: noisy(["endpoint", "method"]) }] } },
              { name: "failed", sum: { dataPoints: [{ asInt: 2, timeUnixNano: "1", attributes: noisy(["service_name"]) }] } },
            ],
          },
        ],
      },
    ],
  });
  const result = filterMetrics(input, policy);
  const [rm] = result.request!.resourceMetrics;
  const [sm] = rm!.scopeMetrics;
  assert.deepEqual(keysOf(rm!.resource.attributes), ["resource.name", "env"]);
  assert.equal(rm!.resource.droppedAttributesCount, 4, "1 dropped by the sender + 3 by the policy");
  assert.deepEqual(sm!.scope, { name: "platform", version: "1.0", attributes: [], droppedAttributesCount: 1 });
  assert.deepEqual(keysOf(sm!.metrics[0]!.gauge!.dataPoints[0]!.attributes), ["endpoint", "method"]);
  assert.deepEqual(keysOf(sm!.metrics[1]!.sum!.dataPoints[0]!.attributes), ["service_name"]);
  assert.deepEqual(result, { ...result, kept: 2, droppedItems: 0, droppedAttributes: 3 + 1 + 3 + 3 });
  assert.ok(!JSON.stringify(result).includes("jane@example.com"));
  assert.ok(!JSON.stringify(result).includes("token=abc"));
  assert.equal(input.resourceMetrics[0]!.resource.attributes.length, 5, "the input is not mutated");
});

test("a key added by config is kept, in its position only", () => {
  const extended = privacyPolicy({ extraAllow: { logs: ["user.email"] } });
  const input = logs({ ...log(17, "Error"), attributes: [str("user.email", "jane@example.com"), str("component", "db")] });
  const record = filterLogs(input, extended).request!.resourceLogs[0]!.scopeLogs[0]!.logRecords[0]!;
  assert.deepEqual(keysOf(record.attributes), ["user.email", "component"]);
  assert.deepEqual(record.attributes[0]!.value, { stringValue: "<email>" }, "a kept value is still scrubbed");
  assert.ok(!policy.allow.logs.has("user.email"), "other policies are not widened");
  assert.deepEqual([...policy.allow.spans], defaultAllowlist.spans);
});

test("only scalar values leave; arrays, maps and bytes are dropped and counted even for allowlisted keys", () => {
  const input = traces(
    span("/runs", 2n * SECOND, 0, {
      attributes: [
        { key: "method", value: { arrayValue: { values: [{ stringValue: "POST" }] } } },
        { key: "service_name", value: { kvlistValue: { values: [str("email", "jane@example.com")] } } },
        { key: "endpoint", value: { bytesValue: "c2VjcmV0" } },
        { key: "method", value: { boolValue: true } },
        { key: "service_name", value: { doubleValue: 1.5 } },
      ],
    }),
  );
  const result = filterTraces(input, policy);
  const out = result.request!.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
  assert.deepEqual(out.attributes, [
    { key: "method", value: { boolValue: true } },
    { key: "service_name", value: { doubleValue: 1.5 } },
  ]);
  assert.equal(out.droppedAttributesCount, 3);
  assert.equal(result.droppedAttributes, 3);
  assert.ok(!JSON.stringify(result).includes("c2VjcmV0") && !JSON.stringify(result).includes("jane"));
});

test("endpoint values leave as route templates, on data points and spans", () => {
  const metrics = MetricsRequest.parse({
    resourceMetrics: [
      {
        scopeMetrics: [
          {
            metrics: [
              {
                name: "latency",
                gauge: {
                  dataPoints: [
                    { asDouble: 1, timeUnixNano: "1", attributes: [str("endpoint", "https://h:1/threads/8d3e1f2a/runs/17?token=abc")] },
                  ],
                },
              },
            ],
          },
        ],
      },
    ],
  });
  const point = filterMetrics(metrics, policy).request!.resourceMetrics[0]!.scopeMetrics[0]!.metrics[0]!.gauge!.dataPoints[0]!;
  assert.deepEqual(point.attributes, [str("endpoint", "/threads/{thread_id}/runs/{run_id}")]);

  const spans = traces(
    span("POST /a2a/3f2a9c1e-7b4d-4e2a-9c1e-0d2f4e6b7a10", 0n, 2, { attributes: [str("endpoint", "/v1/users/42/avatar")] }),
  );
  const out = filterTraces(spans, policy).request!.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
  assert.equal(out.name, "POST /a2a/{assistant_id}");
  // Only known route words stay: "users" and "avatar" are the sender's words, not the platform's routes.
  assert.deepEqual(out.attributes, [str("endpoint", "/v1/{param}/{param}/{param}")]);
});

test("spans: a fast OK span is dropped, a fast failed span and a slow OK span are kept", () => {
  const result = filterTraces(
    traces(span("fast ok", SECOND - 1n, 1), span("fast failed", 1n, 2), span("slow ok", SECOND), span("slow unset", 5n * SECOND, 0)),
    policy,
  );
  assert.deepEqual(
    result.request!.resourceSpans[0]!.scopeSpans[0]!.spans.map((s) => s.name),
    ["fast failed", "slow ok", "slow unset"],
  );
  assert.equal(result.kept, 3);
  assert.equal(result.droppedItems, 1);
  const strict = filterTraces(traces(span("slow ok", SECOND)), privacyPolicy({ slowSpanMs: 1500 }));
  assert.deepEqual(strict, { request: null, kept: 0, droppedItems: 1, droppedAttributes: 0 });
});

test("spans: links and trace state are removed and counted, texts are scrubbed", () => {
  const input = traces(
    span("login for jane@example.com", 0n, 2, {
      traceState: "vendor=secret-state",
      links: [{ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", attributes: [str("customer", "acme")] }],
      droppedLinksCount: 2,
      events: [{ timeUnixNano: "1", name: "retry for 10.0.0.12", attributes: [str("method", "GET"), str("password", "hunter2")] }],
      status: { code: 2, message: "upstream https://api.acme.io/v1/users/42?api_key=k-123 returned 401" },
    }),
  );
  const result = filterTraces(input, policy);
  const out = result.request!.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
  assert.deepEqual(out.links, []);
  assert.equal(out.droppedLinksCount, 3);
  assert.equal(out.traceState, undefined);
  assert.equal(out.name, "login for <email>");
  assert.deepEqual(out.status, { code: 2, message: "upstream https://<text>/v1/{param}/{param} returned <num>" });
  assert.deepEqual(out.events[0], {
    timeUnixNano: "1",
    name: "retry for <ip>",
    attributes: [str("method", "GET")],
    droppedAttributesCount: 1,
  });
  assert.equal(result.droppedAttributes, 1);
  const json = JSON.stringify(result);
  for (const secret of ["secret-state", "0af76519", 'acme"', "jane", "10.0.0.12", "hunter2", "k-123", "/42"]) {
    assert.ok(!json.includes(secret), `${secret} leaked`);
  }
});

test("logs: below Warning is dropped by default; an Error-only policy also drops Warning", () => {
  const input = logs(log(9, "Info"), log(13, "Warning"), log(17, "Error"), log(21, "Fatal"));
  const warnings = filterLogs(input, policy);
  assert.deepEqual(
    warnings.request!.resourceLogs[0]!.scopeLogs[0]!.logRecords.map((r) => r.severityText),
    ["Warning", "Error", "Fatal"],
  );
  assert.equal(warnings.droppedItems, 1);
  const errors = filterLogs(input, privacyPolicy({ logMinSeverity: 17 }));
  assert.deepEqual(
    errors.request!.resourceLogs[0]!.scopeLogs[0]!.logRecords.map((r) => r.severityText),
    ["Error", "Fatal"],
  );
  assert.deepEqual({ ...errors, request: null }, { request: null, kept: 2, droppedItems: 2, droppedAttributes: 0 });
});

test("logs: an unset severityNumber is read from severityText, and unknown texts are dropped", () => {
  const input = logs(log(0, "warn"), log(0, "WARNING"), log(0, "error"), log(0, "Critical"), log(0, "FATAL"), log(0, "info"), log(0, ""));
  const result = filterLogs(input, policy);
  const records = result.request!.resourceLogs[0]!.scopeLogs[0]!.logRecords;
  assert.deepEqual(
    records.map((r) => r.severityNumber),
    [13, 13, 17, 21, 21],
  );
  assert.equal(result.droppedItems, 2);
});

test("logs: bodies leave as scrubbed text only", () => {
  const input = logs(
    log(17, "Error", { stringValue: "login failed for jane@example.com with Bearer abc123xyz from 10.1.2.3" }),
    log(17, "Error", { intValue: 42 }),
    log(17, "Error", { boolValue: false }),
    log(17, "Error", { doubleValue: 0.5 }),
    log(17, "Error", { kvlistValue: { values: [str("email", "jane@example.com")] } }),
    log(17, "Error", { arrayValue: { values: [{ stringValue: "card 4111" }] } }),
    log(17, "Error", { bytesValue: "c2VjcmV0" }),
    { timeUnixNano: "1", severityNumber: 17 },
  );
  const result = filterLogs(input, policy);
  const bodies = result.request!.resourceLogs[0]!.scopeLogs[0]!.logRecords.map((r) => r.body);
  const removed = { stringValue: "[structured body removed]" };
  assert.deepEqual(bodies, [
    { stringValue: "login failed for <email> with Bearer <secret> from <ip>" },
    { stringValue: "<num>" },
    { stringValue: "false" },
    { stringValue: "<num>" },
    removed,
    removed,
    removed,
    { stringValue: "" },
  ]);
  const json = JSON.stringify(result);
  for (const secret of ["jane", "abc123xyz", "10.1.2.3", "card 4111", "c2VjcmV0"]) assert.ok(!json.includes(secret), `${secret} leaked`);
});

test("empty scopes and resources are removed; nothing left gives a null request", () => {
  const input = LogsRequest.parse({
    resourceLogs: [
      { resource: { attributes: [str("service.name", "quiet")] }, scopeLogs: [{ scope: {}, logRecords: [log(9, "Info")] }] },
      {
        resource: { attributes: [str("service.name", "backend")] },
        scopeLogs: [
          { scope: { name: "worker" }, logRecords: [log(9, "Info")] },
          { scope: { name: "server" }, logRecords: [log(17, "Error")] },
        ],
      },
    ],
  });
  const result = filterLogs(input, policy);
  assert.equal(result.request!.resourceLogs.length, 1);
  assert.deepEqual(result.request!.resourceLogs[0]!.resource.attributes, [str("service.name", "backend")]);
  assert.deepEqual(
    result.request!.resourceLogs[0]!.scopeLogs.map((s) => s.scope?.name),
    ["server"],
  );

  assert.deepEqual(filterLogs(logs(log(9, "Info")), policy), { request: null, kept: 0, droppedItems: 1, droppedAttributes: 0 });
  assert.equal(filterTraces(TracesRequest.parse({ resourceSpans: [] }), policy).request, null);
  const noPoints = MetricsRequest.parse({
    resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: "idle", gauge: { dataPoints: [] } }] }] }],
  });
  assert.equal(filterMetrics(noPoints, policy).request, null);
});

test("the policy rejects settings that would let everything out", () => {
  assert.throws(() => privacyPolicy({ logMinSeverity: 0 }), { code: "EGRESS_ERR_INTERNAL", message: /logMinSeverity must be/ });
  assert.throws(() => privacyPolicy({ slowSpanMs: -1 }), { code: "EGRESS_ERR_INTERNAL", message: /slowSpanMs must be/ });
  assert.equal(privacyPolicy({ slowSpanMs: 250 }).slowSpanNanos, 250_000_000n);
  assert.equal(policy.slowSpanNanos, SECOND);
  assert.equal(policy.logMinSeverity, 13);
});
