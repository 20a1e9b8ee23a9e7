// Every free-text field of an OTLP request that leaves the privacy filter, as a function that plants a text in an
// otherwise ordinary request; and what leaves of such a request. Shared by the corpus and property tests.
import { filterLogs, filterMetrics, filterTraces, privacyPolicy } from "../../src/sidecar/privacy/policy.ts";
import { LogsRequest, MetricsRequest, TracesRequest } from "../../src/protocol/otlp.ts";

const policy = privacyPolicy({});
const T0 = 1_793_000_000n * 1_000_000_000n;

/** Every free-text field that leaves, as a function that plants `text` in an otherwise ordinary request. */
export const FIELDS: Record<string, (text: string) => { signal: "metrics" | "traces" | "logs"; request: unknown }> = {
  "resource attribute service.name": (text) => metricsWith({ resource: text }),
  "resource attribute env": (text) => metricsWith({ env: text }),
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
  "log error_type": (text) => logsWith({ errorType: text }),
};

const str = (key: string, stringValue: string) => ({ key, value: { stringValue } });

function metricsWith(text: {
  resource?: string;
  env?: string;
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
          resource: { attributes: [str("service.name", text.resource ?? "backend"), str("env", text.env ?? "production")] },
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

function logsWith(text: { body?: string; severityText?: string; component?: string; errorType?: string }) {
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
                  attributes: [str("component", text.component ?? "db"), str("error_type", text.errorType ?? "TimeoutError")],
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
export function leaves(planted: { signal: "metrics" | "traces" | "logs"; request: unknown }): {
  json: string;
  kept: number;
  texts: string;
} {
  const result =
    planted.signal === "metrics"
      ? filterMetrics(MetricsRequest.parse(planted.request), policy)
      : planted.signal === "traces"
        ? filterTraces(TracesRequest.parse(planted.request), policy)
        : filterLogs(LogsRequest.parse(planted.request), policy);
  return { json: JSON.stringify(result.request), kept: result.kept, texts: texts(result.request) };
}

/** Ids, times and counts: what is not text in a filtered request (hex ids and numbers the filter keeps as they are). */
const notText = new Set([
  "traceId",
  "spanId",
  "parentSpanId",
  "timeUnixNano",
  "startTimeUnixNano",
  "endTimeUnixNano",
  "observedTimeUnixNano",
]);

/** Every text of a filtered request, one a line: what a leak would be in. */
export function texts(request: unknown): string {
  const out: string[] = [];
  const visit = (value: unknown, key: string) => {
    if (typeof value === "string" && !notText.has(key)) out.push(value);
    else if (Array.isArray(value)) for (const item of value) visit(item, key);
    else if (value !== null && typeof value === "object") for (const [k, v] of Object.entries(value)) visit(v, k);
  };
  visit(request, "");
  return out.join("\n");
}
