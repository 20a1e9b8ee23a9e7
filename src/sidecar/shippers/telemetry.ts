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
  // request as bytes, without parsing megabytes only to serialise them again.
  const open = Buffer.from(`{"${fields.resources}":[`);
  const close = Buffer.from("]}");
  const comma = Buffer.from(",");
  const resourceList = (body: string | Buffer): Buffer => {
    const bytes = typeof body === "string" ? Buffer.from(body) : body;
    if (
      bytes.length >= open.length + close.length &&
      bytes.subarray(0, open.length).equals(open) &&
      bytes.subarray(-close.length).equals(close)
    ) {
      return bytes.subarray(open.length, -close.length);
    }
    const list = (JSON.parse(bytes.toString("utf8")) as Record<string, unknown[]>)[fields.resources] ?? [];
    return Buffer.from(JSON.stringify(list).slice(1, -1));
  };
  return {
    stream: signal,
    path,
    batchSize: 1_000,
    batchBytes,
    keepDelivered: false,
    answer: beaconAnswers[signal],
    buildPayload: (records: readonly OutboxRecord[]) => {
      const parts: Buffer[] = [open];
      for (const record of records) {
        const list = resourceList(record.body);
        if (list.length === 0) continue;
        if (parts.length > 1) parts.push(comma);
        parts.push(list);
      }
      parts.push(close);
      return Buffer.concat(parts);
    },
  };
}
