import { randomUUID } from "node:crypto";
import type { TraceTransaction } from "../../src/protocol/trace-transaction.ts";
import type { UsageMeasures } from "../../src/protocol/usage-snapshot.ts";

export const ORG_ID = "6f1c8a52-3b7e-4c55-9a51-0d2f4e6b7a10";
export const OTHER_ORG_ID = "0b9e1d2c-7a44-4f0e-8c1b-5e6f7a8b9c0d";

export interface TestLicense {
  key: string;
  id: string;
  organizationId: string;
  expiresAt: string;
  seats: number;
}

/** A license key that is long and distinctive, so a leak into any output is easy to find. */
export function testLicense(overrides: Partial<TestLicense> = {}): TestLicense {
  return {
    key: `lic-${randomUUID()}-SECRET`,
    id: "acme-prod",
    organizationId: ORG_ID,
    expiresAt: "2099-12-31T00:00:00Z",
    seats: 50,
    ...overrides,
  };
}

export function traceTransaction(overrides: Partial<TraceTransaction> = {}): TraceTransaction {
  return {
    id: randomUUID(),
    tenant_id: "2d3c4b5a-6978-4abc-8def-0123456789ab",
    session_id: randomUUID(),
    trace_count: 7,
    start_insertion_time: "2026-11-01T10:00:00Z",
    end_insertion_time: "2026-11-01T10:05:00Z",
    start_interval_time: "2026-11-01T10:00:00Z",
    end_interval_time: "2026-11-01T10:05:00Z",
    status: "completed",
    num_failed_send_attempts: 0,
    transaction_type: "traces",
    organization_id: ORG_ID,
    ...overrides,
  };
}

export function traceTransactions(n: number, overrides: Partial<TraceTransaction> = {}): TraceTransaction[] {
  return Array.from({ length: n }, () => traceTransaction(overrides));
}

export function usageMeasures(value = 1): UsageMeasures {
  return {
    workspaces: value,
    users: value,
    projects: value,
    experiments: value,
    datasets: value,
    evaluators: value,
    run_rules: value,
    annotation_queues: value,
    prompts: value,
    prompt_commits: value,
    prompt_pulls: value,
    active_pats_30d: value,
  };
}

const nanos = (date: string) => (BigInt(Date.parse(date)) * 1_000_000n).toString();

/** The platform's sample metrics request (docs/PROTOCOL.md): a latency gauge and a failed-requests counter. */
export function metricsRequest() {
  return {
    resourceMetrics: [
      {
        resource: {
          attributes: [
            { key: "resource.name", value: { stringValue: "platform-backend" } },
            { key: "env", value: { stringValue: "self-hosted" } },
          ],
        },
        scopeMetrics: [
          {
            scope: { name: "platform", version: "0.11.0" },
            metrics: [
              {
                name: "platform_http_requests_latency",
                unit: "seconds",
                description: "request latency",
                gauge: {
                  dataPoints: [
                    {
                      asDouble: 0.25,
                      startTimeUnixNano: nanos("2026-11-01T10:00:00Z"),
                      timeUnixNano: nanos("2026-11-01T10:00:10Z"),
                      attributes: [
                        { key: "endpoint", value: { stringValue: "/runs" } },
                        { key: "method", value: { stringValue: "POST" } },
                        { key: "service_name", value: { stringValue: "backend" } },
                      ],
                    },
                  ],
                },
              },
              {
                name: "platform_http_requests_failed",
                unit: "1",
                description: "counter of failed requests",
                sum: {
                  aggregationTemporality: 2,
                  isMonotonic: true,
                  dataPoints: [
                    {
                      asInt: "3",
                      startTimeUnixNano: nanos("2026-11-01T10:00:00Z"),
                      timeUnixNano: nanos("2026-11-01T10:00:10Z"),
                      attributes: [{ key: "endpoint", value: { stringValue: "/runs" } }],
                    },
                  ],
                },
              },
            ],
          },
        ],
      },
    ],
  };
}

/** metricsRequest() with its latency gauge's one point repeated `points` times, the i-th carrying `attributes(i)`. */
export function metricsRequestOfPoints(points: number, attributes: (i: number) => { key: string; value: { stringValue: string } }[]) {
  const request = metricsRequest();
  const gauge = request.resourceMetrics[0]!.scopeMetrics[0]!.metrics[0]!.gauge!;
  const point = gauge.dataPoints[0]!;
  gauge.dataPoints = Array.from({ length: points }, (_, i) => ({ ...point, attributes: attributes(i) }));
  return request;
}
export function tracesRequest() {
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: "backend" } }] },
        scopeSpans: [
          {
            scope: {},
            spans: [
              {
                traceId: "5B8EFFF798038103D269B633813FC60C",
                spanId: "EEE19B7EC3C1B174",
                parentSpanId: "",
                name: "POST /runs",
                startTimeUnixNano: nanos("2026-11-01T10:00:00Z"),
                endTimeUnixNano: nanos("2026-11-01T10:00:02Z"),
                droppedAttributesCount: 0,
                events: [{ timeUnixNano: nanos("2026-11-01T10:00:01Z"), name: "retry", droppedAttributesCount: 0 }],
                droppedEventsCount: 0,
                links: [],
                droppedLinksCount: 0,
                status: { message: "timeout", code: 2 },
              },
            ],
          },
        ],
      },
    ],
  };
}

export function logsRequest() {
  return {
    resourceLogs: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: "backend" } }] },
        scopeLogs: [
          {
            scope: {},
            logRecords: [
              {
                timeUnixNano: nanos("2026-11-01T10:00:00Z"),
                severityNumber: 13,
                severityText: "Warning",
                body: { stringValue: "connection pool nearly exhausted" },
                attributes: [
                  { key: "component", value: { stringValue: "db" } },
                  { key: "pool_size", value: { intValue: "20" } },
                ],
                droppedAttributesCount: 0,
                traceId: "",
                spanId: "",
              },
            ],
          },
        ],
      },
    ],
  };
}
