import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { filterLogs, filterMetrics, filterTraces, privacyPolicy } from "../../src/agent/privacy/policy.ts";
import { LogsRequest, MetricsRequest, TracesRequest } from "../../src/protocol/otlp.ts";
import { CORPUS } from "../helpers/private-values.ts";

// Realistic private values in every free-text field that leaves, in the encodings they arrive in: none may reach the
// filter's output (what the beacon stores), while the telemetry itself still does.

const policy = privacyPolicy({});
const T0 = 1_793_000_000n * 1_000_000_000n;

/** Every free-text field that leaves, as a function that plants `text` in an otherwise ordinary request. */
const FIELDS: Record<string, (text: string) => { signal: "metrics" | "traces" | "logs"; request: unknown }> = {
  "resource attribute service.name": (text) => metricsWith({ resource: text }),
  "scope name": (text) => metricsWith({ scopeName: text }),
  "scope version": (text) => metricsWith({ scopeVersion: text }),
  "metric name": (text) => metricsWith({ name: text }),
  "metric unit": (text) => metricsWith({ unit: text }),
  "metric description": (text) => metricsWith({ description: text }),
  "data point endpoint": (text) => metricsWith({ endpoint: text }),
  "data point method": (text) => metricsWith({ method: text }),
  "span name": (text) => tracesWith({ name: text }),
  "span status message": (text) => tracesWith({ message: text }),
  "span event name": (text) => tracesWith({ event: text }),
  "span endpoint": (text) => tracesWith({ endpoint: text }),
  "log body": (text) => logsWith({ body: text }),
  "log severity text": (text) => logsWith({ severityText: text }),
  "log component": (text) => logsWith({ component: text }),
};

const str = (key: string, stringValue: string) => ({ key, value: { stringValue } });

function metricsWith(text: {
  resource?: string;
  scopeName?: string;
  scopeVersion?: string;
  name?: string;
  unit?: string;
  description?: string;
  endpoint?: string;
  method?: string;
}) {
  return {
    signal: "metrics" as const,
    request: {
      resourceMetrics: [
        {
          resource: { attributes: [str("service.name", text.resource ?? "backend")] },
          scopeMetrics: [
            {
              scope: { name: text.scopeName ?? "platform", version: text.scopeVersion ?? "1.0.0" },
              metrics: [
                {
                  name: text.name ?? "platform_http_requests_latency",
                  unit: text.unit ?? "seconds",
                  description: text.description ?? "request latency",
                  gauge: {
                    dataPoints: [
                      {
                        asDouble: 0.25,
                        timeUnixNano: T0.toString(),
                        attributes: [str("endpoint", text.endpoint ?? "/runs"), str("method", text.method ?? "POST")],
                      },
                    ],
                  },
                },
              ],
            },
          ],
        },
      ],
    },
  };
}

function tracesWith(text: { name?: string; message?: string; event?: string; endpoint?: string }) {
  return {
    signal: "traces" as const,
    request: {
      resourceSpans: [
        {
          resource: {},
          scopeSpans: [
            {
              scope: {},
              spans: [
                {
                  traceId: "5b8efff798038103d269b633813fc60c",
                  spanId: "eee19b7ec3c1b174",
                  name: text.name ?? "POST /runs",
                  startTimeUnixNano: T0.toString(),
                  endTimeUnixNano: (T0 + 5_000_000_000n).toString(),
                  attributes: [str("endpoint", text.endpoint ?? "/runs")],
                  events: [{ timeUnixNano: T0.toString(), name: text.event ?? "retry" }],
                  status: { code: 2, message: text.message ?? "upstream failed" },
                },
              ],
            },
          ],
        },
      ],
    },
  };
}

function logsWith(text: { body?: string; severityText?: string; component?: string }) {
  return {
    signal: "logs" as const,
    request: {
      resourceLogs: [
        {
          resource: {},
          scopeLogs: [
            {
              scope: {},
              logRecords: [
                {
                  timeUnixNano: T0.toString(),
                  severityNumber: 17,
                  severityText: text.severityText ?? "ERROR",
                  body: { stringValue: text.body ?? "pool exhausted" },
                  attributes: [str("component", text.component ?? "db")],
                },
              ],
            },
          ],
        },
      ],
    },
  };
}

/** What leaves for a planted request: the filtered request as JSON, and how many items are kept. */
function leaves(planted: { signal: "metrics" | "traces" | "logs"; request: unknown }): { json: string; kept: number } {
  const result =
    planted.signal === "metrics"
      ? filterMetrics(MetricsRequest.parse(planted.request), policy)
      : planted.signal === "traces"
        ? filterTraces(TracesRequest.parse(planted.request), policy)
        : filterLogs(LogsRequest.parse(planted.request), policy);
  return { json: JSON.stringify(result.request), kept: result.kept };
}

test("the corpus: no private value, in any field or encoding, leaves; the item itself still does", () => {
  const leaks: string[] = [];
  for (const [field, plant] of Object.entries(FIELDS)) {
    for (const [name, { value, secrets }] of Object.entries(CORPUS)) {
      const { json, kept } = leaves(plant(value));
      assert.equal(kept, 1, `${name} in ${field}: the item still leaves`);
      for (const secret of secrets) if (json.includes(secret)) leaks.push(`${name} in ${field}: "${secret}" left in ${json.slice(0, 300)}`);
    }
  }
  assert.deepEqual(leaks, []);
});

test("ordinary values stay as they are: the filter does not eat telemetry", () => {
  const ordinary = [
    "platform_http_requests_latency",
    "seconds",
    "request latency",
    "POST /runs",
    "GET /threads/{thread_id}/runs",
    "pool exhausted after 30 s",
    "1.0.0",
    "backend",
    "ERROR",
    "HTTP 503 from upstream",
    "retry 3 of 5",
  ];
  for (const value of ordinary) {
    const { json } = leaves(FIELDS["metric description"]!(value));
    assert.ok(json.includes(JSON.stringify(value).slice(1, -1)), `${value} kept`);
  }
});

test("property: private values planted at random places in valid requests never leave; the telemetry does", () => {
  const values = Object.values(CORPUS);
  const fields = Object.values(FIELDS);
  const filler = fc.stringMatching(/^[a-z ]{0,12}$/);
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: values.length - 1 }),
      fc.integer({ min: 0, max: fields.length - 1 }),
      filler,
      filler,
      (v, f, before, after) => {
        const { value, secrets } = values[v]!;
        const { json, kept } = leaves(fields[f]!(`${before}${before ? " " : ""}${value}${after ? " " : ""}${after}`));
        assert.equal(kept, 1);
        for (const secret of secrets) assert.ok(!json.includes(secret), `${secret} left: ${json.slice(0, 300)}`);
      },
    ),
    { numRuns: 2000, seed: 20261124 },
  );
});
