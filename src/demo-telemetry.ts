import { randomUUID } from "node:crypto";
import type { BeaconStore } from "./beacon/store.ts";
import type { KeyValue, LogsRequest, MetricsRequest } from "./protocol/otlp.ts";

// The demo's operational telemetry: what an instance's exporter might send, identifiers and all, so the
// demo can show what the privacy filter lets reach the beacon.

const str = (key: string, value: string): KeyValue => ({ key, value: { stringValue: value } });
const nanos = (ms: number) => (BigInt(ms) * 1_000_000n).toString();

export function sampleTelemetry(now: number) {
  const resource = {
    attributes: [str("service.name", "backend"), str("env", "demo"), str("host.name", "node-7.internal")],
    droppedAttributesCount: 0,
  };
  const metrics: MetricsRequest = {
    resourceMetrics: [
      {
        resource,
        scopeMetrics: [
          {
            metrics: [
              {
                name: "platform_http_requests_latency",
                unit: "seconds",
                description: "request latency",
                gauge: {
                  dataPoints: [
                    {
                      timeUnixNano: nanos(now),
                      asDouble: 0.42,
                      attributes: [
                        str("endpoint", `/a2a/${randomUUID()}`),
                        str("method", "POST"),
                        str("service_name", "backend"),
                        str("user.email", "alice@example.com"),
                      ],
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
  const record = (severityNumber: number, severityText: string, body: string) => ({
    timeUnixNano: nanos(now),
    severityNumber,
    severityText,
    body: { stringValue: body },
    attributes: [str("component", "db"), str("user.id", "u-123")],
    droppedAttributesCount: 0,
    traceId: "",
    spanId: "",
  });
  const logs: LogsRequest = {
    resourceLogs: [
      {
        resource,
        scopeLogs: [
          {
            logRecords: [
              record(13, "Warning", "slow query for alice@example.com from 10.1.2.3"),
              record(9, "Info", "user alice@example.com logged in"),
            ],
          },
        ],
      },
    ],
  };
  return { metrics, logs };
}

const attributes = (list: KeyValue[]) => list.map((a) => `${a.key}=${a.value.stringValue ?? a.value.intValue ?? ""}`).join(", ");

/**
 * One line per metric point and log record the beacon stored (what actually left), and beside them what was sent
 * and did not leave: resource attributes the filter dropped (by name), log records that stayed home (by severity).
 */
export function describeStoredTelemetry(store: BeaconStore, sent: ReturnType<typeof sampleTelemetry>): string[] {
  const lines: string[] = [];
  const droppedNames = (kept: KeyValue[]) => {
    const keptNames = new Set(kept.map((a) => a.key));
    const sentNames = sent.metrics.resourceMetrics[0]!.resource.attributes.map((a) => a.key);
    const dropped = sentNames.filter((name) => !keptNames.has(name));
    return dropped.length > 0 ? `; not sent: ${dropped.join(", ")}` : "";
  };
  for (const batch of store.otlpBatches("metrics")) {
    for (const rm of (batch.body as MetricsRequest).resourceMetrics) {
      for (const metric of rm.scopeMetrics.flatMap((s) => s.metrics)) {
        for (const point of (metric.gauge ?? metric.sum)!.dataPoints)
          lines.push(`  metric ${metric.name} {${attributes(point.attributes)}}`);
      }
      lines.push(`    resource {${attributes(rm.resource.attributes)}}${droppedNames(rm.resource.attributes)}`);
    }
  }
  const stored = store
    .otlpBatches("logs")
    .flatMap((batch) => (batch.body as LogsRequest).resourceLogs.flatMap((r) => r.scopeLogs.flatMap((s) => s.logRecords)));
  for (const record of stored) {
    lines.push(`  log    ${record.severityText} "${record.body?.stringValue}" {${attributes(record.attributes)}}`);
  }
  const sentRecords = sent.logs.resourceLogs.flatMap((r) => r.scopeLogs.flatMap((s) => s.logRecords));
  const storedSeverities = stored.map((r) => r.severityText);
  for (const record of sentRecords.filter((r) => !storedSeverities.includes(r.severityText))) {
    lines.push(`  log    ${record.severityText}: stayed home (log records leave from Warning up: privacy.logSeverity)`);
  }
  return lines;
}
