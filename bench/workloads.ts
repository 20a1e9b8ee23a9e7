// The bodies the benchmarks send: the same ones go to the sidecar and to the floors.
import { randomUUID } from "node:crypto";
import { otlpProtoTypes } from "../src/protocol/otlp-proto-schema.ts";
import { metricsRequestOfPoints, traceTransactions } from "../test/helpers/fixtures.ts";

export const BATCH = 500;
export const BATCHES = 100;
export const INGEST_TOTAL = BATCH * BATCHES;

/** POST /v1/transactions bodies: BATCHES batches of BATCH trace transactions. */
export function transactionBodies(): string[] {
  return Array.from({ length: BATCHES }, () => JSON.stringify({ trace_transactions: traceTransactions(BATCH) }));
}

export const OTLP_POINTS = 100;
export const OTLP_REQUESTS = 1_000;

/**
 * Metrics export requests of OTLP_POINTS gauge points, each with the three allowlisted attributes, two the
 * privacy filter drops, and an endpoint it must template: the filter has work on every point.
 */
export function otlpBodies(requests = OTLP_REQUESTS): string[] {
  return Array.from({ length: requests }, (_, r) => {
    const request = metricsRequestOfPoints(OTLP_POINTS, (i) => [
      { key: "endpoint", value: { stringValue: `/threads/${randomUUID()}/runs/${r * OTLP_POINTS + i}` } },
      { key: "method", value: { stringValue: "POST" } },
      { key: "service_name", value: { stringValue: "backend" } },
      { key: "user.email", value: { stringValue: `user${i}@example.com` } },
      { key: "http.url", value: { stringValue: `https://api.example.com/x?token=${randomUUID()}` } },
    ]);
    return JSON.stringify(request);
  });
}

/** The same requests as OTLP/HTTP binary protobuf (OpenTelemetry's default encoding): the same points, half the bytes. */
export function protobufBodies(jsonBodies: readonly string[]): Buffer[] {
  const type = otlpProtoTypes.requests.metrics;
  return jsonBodies.map((body) => Buffer.from(type.encode(type.fromObject(JSON.parse(body))).finish()));
}
