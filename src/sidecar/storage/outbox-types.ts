// The outbox's records and streams, shared by the outbox (outbox.ts) and each of its files (outbox-file.ts).

/** What the sidecar ships; each stream is shipped on its own. */
export const STREAMS = ["billing", "metrics", "traces", "logs", "usage"] as const;
export type Stream = (typeof STREAMS)[number];
/** The streams kept in telemetry.db (the OTLP signals): best effort, committed without a sync (outbox.ts says why). */
export const TELEMETRY_STREAMS = ["metrics", "traces", "logs"] as const satisfies readonly Stream[];
export type TelemetryStream = (typeof TELEMETRY_STREAMS)[number];

/**
 * A record's life: pending -> sending -> completed, or back to pending on a failed send, or failed (dead letter).
 * `sending` is held in memory (claims.ts): the file keeps a record being sent as pending.
 */
export type RecordState = "pending" | "sending" | "completed" | "failed";

/** A stored record's `recordId` is a getter (record-key.ts): read it; a copy made by spreading or serialising lacks it. */
export interface OutboxRecord {
  readonly seq: number;
  readonly recordId: string | null;
  /**
   * JSON text, as bytes when claimed (a Buffer, whether it is stored as text or, for telemetry, as a BLOB): it goes
   * out as bytes too, with no conversion to a JavaScript string and back on the way (bench/: the relay, the drain).
   */
  body: string | Buffer;
  /** Failed sends so far; billing sends it as num_failed_send_attempts. */
  attempts: number;
}

/** A record's body as text (billing and usage bodies are stored as text already). */
export const bodyText = (record: Pick<OutboxRecord, "body">): string =>
  typeof record.body === "string" ? record.body : record.body.toString("utf8");

/** A byte cap shared by some streams: over it, their oldest undelivered records are dropped first. */
export interface ByteCap<S extends Stream = Stream> {
  streams: readonly S[];
  maxBytes: number;
}

export interface CappedEnqueueResult {
  inserted: number;
  /** Records (and their bytes) dropped to stay under the cap: older ones, or the new ones when they alone exceed it. */
  droppedRecords: number;
  droppedBytes: number;
}
