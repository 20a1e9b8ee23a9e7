/** Where an attribute sits in an OTLP request. */
export type Position = "resource" | "metrics" | "spans" | "logs";

/**
 * The attribute keys the platform collects (docs/PROTOCOL.md, "What operational telemetry carries"). Frozen:
 * widening it is a config decision, not a side effect.
 */
export const defaultAllowlist: Readonly<Record<Position, readonly string[]>> = Object.freeze({
  resource: Object.freeze(["resource.name", "env", "service.name"]),
  metrics: Object.freeze(["endpoint", "method", "service_name"]),
  spans: Object.freeze(["endpoint", "method", "service_name"]),
  logs: Object.freeze(["component", "pool_size", "error_type"]),
});
