import { trace, type Tracer } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { AGENT_SERVER_SERVICE } from "./sidecar-reporter.ts";

/** Where the agent server's traces go: on only with an API key (PLATFORM_API_KEY). */
export interface TracingSettings {
  /** The tracing service's base URL (PLATFORM_ENDPOINT); spans go to {endpoint}/otel/v1/traces as OTLP JSON. */
  endpoint: string;
  apiKey: string;
  /** PLATFORM_PROJECT: the project every agent of a conversation should share. */
  project: string;
  exportIntervalMs: number;
}

export interface Tracing {
  tracer: Tracer;
  shutdown(): Promise<void>;
}

/** The agent server's tracer: OTLP to the tracing endpoint, or a no-op one (nothing recorded, nothing sent) when off. */
export function createTracing(settings: TracingSettings | undefined): Tracing {
  if (!settings) return { tracer: trace.getTracer(AGENT_SERVER_SERVICE), shutdown: async () => undefined };
  const exporter = new OTLPTraceExporter({
    url: `${settings.endpoint.replace(/\/+$/, "")}/otel/v1/traces`,
    headers: { "x-api-key": settings.apiKey, "platform-project": settings.project },
  });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": AGENT_SERVER_SERVICE, "platform.project": settings.project }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: settings.exportIntervalMs })],
  });
  return { tracer: provider.getTracer(AGENT_SERVER_SERVICE), shutdown: () => provider.shutdown().catch(() => undefined) };
}
