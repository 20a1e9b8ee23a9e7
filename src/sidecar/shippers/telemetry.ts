import { otlpSignals, type OtlpSignal } from "../../protocol/otlp.ts";
import { beaconAnswers } from "../egress/answer-rules.ts";
import type { OutboxRecord } from "../storage/outbox.ts";
import type { StreamPolicy } from "./shipper.ts";

/**
 * Operational telemetry: filtered OTLP export requests (one record each) to /v1/beacon/v1/{signal}, merged
 * into requests of at most `batchBytes` (their resource entries side by side). Best-effort: delivered
 * records are deleted, not kept.
 */
export function telemetryPolicy(signal: OtlpSignal, batchBytes: number): StreamPolicy {
  const { path, fields } = otlpSignals[signal];
  // A record is `{"<resources>":[...]}` as JSON.stringify wrote it at intake: its list is spliced into the
  // request as text, without parsing megabytes only to serialise them again.
  const open = `{"${fields.resources}":[`;
  const close = "]}";
  const resourceList = (body: string): string =>
    body.startsWith(open) && body.endsWith(close)
      ? body.slice(open.length, -close.length)
      : JSON.stringify((JSON.parse(body) as Record<string, unknown[]>)[fields.resources] ?? []).slice(1, -1);
  return {
    stream: signal,
    path,
    batchSize: 1_000,
    batchBytes,
    keepDelivered: false,
    answer: beaconAnswers[signal],
    buildPayload: (records: readonly OutboxRecord[]) =>
      `${open}${records
        .map((r) => resourceList(r.body))
        .filter((list) => list !== "")
        .join(",")}${close}`,
  };
}
