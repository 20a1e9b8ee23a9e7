import type { OtlpSignal } from "../../protocol/otlp.ts";

/**
 * The forward queue: one row per stored OTLP batch still to go to the vendor's collector, added in the transaction
 * that stores the batch (when forwarding is on) and removed once the collector took it (or refused it for good).
 * A queue rather than a cursor over otlp_batches: PostgreSQL hands out sequence numbers before commit, so a cursor
 * could step past a batch whose transaction commits a moment after a later one's, and lose it. Its own table, added
 * beside the others on either engine; older beacons ignore it (no schema version change).
 */
export const FORWARD_QUEUE_SQLITE = `
CREATE TABLE IF NOT EXISTS forward_queue (
  seq INTEGER PRIMARY KEY REFERENCES otlp_batches (seq) ON DELETE CASCADE,
  bytes INTEGER NOT NULL,
  received_at TEXT NOT NULL
);
`;

export const FORWARD_QUEUE_POSTGRES = `
CREATE TABLE IF NOT EXISTS forward_queue (
  seq bigint PRIMARY KEY REFERENCES otlp_batches (seq) ON DELETE CASCADE,
  bytes integer NOT NULL,
  received_at text NOT NULL
);
`;

/** One stored batch waiting to be forwarded. */
export interface QueuedBatch {
  seq: number;
  signal: OtlpSignal;
  licenseId: string | null;
  /** The stored OTLP JSON text. */
  body: string;
  /** When the beacon stored it (ISO text). */
  receivedAt: string;
}

/** What a round holds: the batches it claimed, and how it removes those it is done with. */
export interface ForwardRound {
  batches: QueuedBatch[];
  /** Takes these out of the queue (forwarded, or refused for good); durable by the end of the round at the latest. */
  done(seqs: readonly number[]): Promise<void>;
}

export interface ForwardBacklog {
  batches: number;
  /** Bytes of the stored JSON bodies. */
  bytes: number;
  /** When the oldest queued batch was received (ISO text), or null for an empty queue. */
  oldestReceivedAt: string | null;
}

export interface ForwardQueue {
  /**
   * Runs `work` over up to `limit` of the oldest queued batches that no other replica holds (none: an empty list).
   * On PostgreSQL the batches stay claimed (row locks, SKIP LOCKED for the others) until `work` ends; a replica that
   * dies meanwhile releases them, and another sends them again: at least once.
   */
  round<T>(limit: number, work: (round: ForwardRound) => Promise<T>): Promise<T>;
  backlog(): Promise<ForwardBacklog>;
}
