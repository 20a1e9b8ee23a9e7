import { gzipSync } from "node:zlib";
import { MetricReader } from "@opentelemetry/sdk-metrics";
import { BeaconStore } from "../../src/beacon/store.ts";
import {
  otlpSignals,
  type KeyValue,
  type LogsRequest,
  type MetricsRequest,
  type OtlpSignal,
  type TracesRequest,
} from "../../src/protocol/otlp.ts";
import { logsRequest, metricsRequest, tracesRequest } from "./fixtures.ts";

type AnyRequest = MetricsRequest & TracesRequest & LogsRequest;
type ResourceEntry = { resource: { attributes: KeyValue[]; droppedAttributesCount: number } };

/** The sample request of a signal, its resource tagged `env=<marker>` so a test finds its own data at the beacon. */
export function taggedRequest(signal: OtlpSignal, marker: string): any {
  const request: any = { metrics: metricsRequest, traces: tracesRequest, logs: logsRequest }[signal]();
  for (const entry of request[otlpSignals[signal].fields.resources]) {
    entry.resource.attributes = [
      ...entry.resource.attributes.filter((a: KeyValue) => a.key !== "env"),
      { key: "env", value: { stringValue: marker } },
    ];
  }
  return request;
}

function envOf(entry: ResourceEntry): string | undefined {
  return entry.resource.attributes.find((a) => a.key === "env")?.value.stringValue;
}

/** Resource entries the beacon stored for `signal` whose `env` attribute is `marker` (from any batch). */
export function beaconResources(beaconDataDir: string, signal: OtlpSignal, marker: string): any[] {
  let store: BeaconStore;
  try {
    store = new BeaconStore(beaconDataDir, { readonly: true });
  } catch {
    return []; // the beacon has stored nothing yet
  }
  try {
    return store
      .otlpBatches(signal)
      .flatMap((batch) => (batch.body as AnyRequest)[otlpSignals[signal].fields.resources] as ResourceEntry[])
      .filter((entry) => envOf(entry) === marker);
  } finally {
    store.close();
  }
}

/** POSTs an OTLP request to the sidecar's receiver as JSON (optionally gzipped) and returns status and body. */
export async function postOtlp(agentUrl: string, signal: OtlpSignal, body: unknown, options: { gzip?: boolean } = {}) {
  const json = Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
  const response = await fetch(`${agentUrl}/v1/${signal}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(options.gzip ? { "content-encoding": "gzip" } : {}) },
    body: options.gzip ? gzipSync(json) : json,
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

/** One counter's value from the sidecar's Prometheus text (`name{labels}`), 0 when absent. */
export async function promValue(agentUrl: string, series: string): Promise<number> {
  const text = await (await fetch(`${agentUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

/** A metric reader collected by hand (`await reader.collect()`), for tests that want the SDK's own output. */
export class ManualReader extends MetricReader {
  protected override async onShutdown() {}
  protected override async onForceFlush() {}
}
