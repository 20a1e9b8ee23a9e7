import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { SeverityNumber, SpanStatusCode } from "@opentelemetry/api";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import { OTLPLogExporter as JsonLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { OTLPLogExporter as ProtoLogExporter } from "@opentelemetry/exporter-logs-otlp-proto";
import { OTLPTraceExporter as JsonTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { InMemoryLogRecordExporter, LoggerProvider, SimpleLogRecordProcessor } from "@opentelemetry/sdk-logs";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type Span } from "@opentelemetry/sdk-trace";
import { LONG_TOKEN } from "../../src/sidecar/privacy/scrub.ts";
import { testLicense } from "../helpers/fixtures.ts";
import { agentConfig, beaconConfig, startAgentProcess, startBeacon, waitFor, type ServiceProcess } from "../helpers/processes.ts";
import { beaconResources } from "../helpers/telemetry.ts";

// One log body, span name, attribute value or event name of 6 MiB is valid OTLP under the sidecar's 16 MiB body limit.
// It once overflowed the scrubber's regex stack (500, and the exporter dropped the whole batch). Through the real
// sidecar, from the official exporters in both encodings: 200, and what reaches the beacon is scrubbed.

const license = testLicense();
const MiB = 2 ** 20;
const sentence = "paid 4111 1111 1111 1111 for alice@corp.example from 203.0.113.7 with token=s3cr3tv4lue ";
/** A MiB of sentences with private values in them, then a 6 MiB word (what overflowed the stack). */
const huge = sentence.repeat(Math.ceil(MiB / sentence.length)) + "a1".repeat((6 * MiB) / 2);
const SECRETS = ["4111 1111", "alice@", "203.0.113", "s3cr3tv4lue", "a1a1a1a1"];
const SCRUBBED = "paid <num> <num> <num> <num> for <email> from <ip> with token=<secret> ";

let beacon: ServiceProcess;
let beaconDataDir: string;
let agent: ServiceProcess;

before(async () => {
  const fixture = beaconConfig([license]);
  beaconDataDir = fixture.dataDir;
  beacon = await startBeacon(fixture);
  agent = await startAgentProcess(agentConfig(beacon.url, { selfTelemetry: { enabled: false } }), { PLATFORM_LICENSE_KEY: license.key });
});
after(async () => {
  await agent?.stop();
  await beacon?.stop();
});

type Field = "log body" | "span name" | "span attribute value" | "event name";
const FIELDS: Field[] = ["log body", "span name", "span attribute value", "event name"];

/** The SDK's own records of one item carrying `huge` in `field`, its resource tagged `env=<marker>`. */
function recordsFor(field: Field, marker: string) {
  const resource = resourceFromAttributes({ "service.name": "backend", env: marker });
  if (field === "log body") {
    const logs = new InMemoryLogRecordExporter();
    new LoggerProvider({ resource, processors: [new SimpleLogRecordProcessor({ exporter: logs })] })
      .getLogger("platform")
      .emit({ severityNumber: SeverityNumber.ERROR, severityText: "ERROR", body: huge });
    return { signal: "logs" as const, items: logs.getFinishedLogRecords() };
  }
  const spans = new InMemorySpanExporter();
  const tracer = new TracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] }).getTracer("platform");
  const span = tracer.startSpan(field === "span name" ? huge : "POST /runs") as Span;
  if (field === "span attribute value") span.setAttribute("service_name", huge); // free text ("method" is one of a set)
  if (field === "event name") span.addEvent(huge);
  span.setStatus({ code: SpanStatusCode.ERROR }); // failed spans leave
  span.end();
  return { signal: "traces" as const, items: spans.getFinishedSpans() };
}

function exporterFor(signal: "logs" | "traces", encoding: "json" | "protobuf") {
  const url = `${agent.url}/v1/${signal}`;
  const options = { url, timeoutMillis: 120_000 };
  if (signal === "logs") return encoding === "json" ? new JsonLogExporter(options) : new ProtoLogExporter(options);
  return encoding === "json" ? new JsonTraceExporter(options) : new ProtoTraceExporter(options);
}

for (const encoding of ["json", "protobuf"] as const) {
  test(`the official ${encoding} exporters: a 7 MiB log body, span name, attribute value and event name each export (200), scrubbed`, async () => {
    for (const field of FIELDS) {
      const marker = `huge-${encoding}-${field.replaceAll(" ", "-")}`;
      const { signal, items } = recordsFor(field, marker);
      const exporter = exporterFor(signal, encoding);
      const started = performance.now();
      const result = await new Promise<ExportResult>((resolve) => exporter.export(items as never, resolve));
      const ms = Math.round(performance.now() - started);
      console.log(`${encoding}, a ${(huge.length / MiB).toFixed(1)} MiB ${field}: exported in ${ms} ms`);
      await exporter.shutdown();
      assert.equal(result.code, ExportResultCode.SUCCESS, `${field}: ${result.error}`);
      // A pass over 6 MiB takes well under a second; anything quadratic in it, hours.
      assert.ok(ms < 30_000, `${field}: ${ms} ms`);

      const stored = await waitFor(() => beaconResources(beaconDataDir, signal, marker)[0], 30_000, `${marker} at the beacon`);
      const text = JSON.stringify(stored);
      for (const secret of SECRETS) assert.ok(!text.includes(secret), `${field}: ${secret} never leaves`);
      assert.ok(text.includes(`${SCRUBBED}${SCRUBBED}`), `${field}: the sentences arrive, scrubbed`);
      assert.ok(text.includes(`${SCRUBBED}${LONG_TOKEN}`), `${field}: the 6 MiB word leaves as ${LONG_TOKEN}`);
    }
  });
}
