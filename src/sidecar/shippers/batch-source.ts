import type { Clock } from "../../clock.ts";
import type { Outbox, OutboxRecord } from "../storage/outbox.ts";
import type { StreamPolicy } from "./shipper.ts";

/**
 * Where a stream's batches come from and where their records settle: claims from the outbox (when a batch is due),
 * hands back what was not sent, and records each record's end (delivered, failed attempt, dead letter).
 */
export class BatchSource {
  readonly #outbox: Outbox;
  readonly #policy: StreamPolicy;
  readonly #flushMs: number;
  readonly #now: Clock;

  constructor(o: { outbox: Outbox; policy: StreamPolicy; flushMs: number; now: Clock }) {
    this.#outbox = o.outbox;
    this.#policy = o.policy;
    this.#flushMs = o.flushMs;
    this.#now = o.now;
  }

  /** When the next batch is due: at once when full, else once its oldest record has waited flushMs; Infinity when empty. */
  dueInMs(): number {
    const { stream, batchSize, batchBytes } = this.#policy;
    const { count, bytes, oldestAt } = this.#outbox.stats.pendingHead(stream, batchSize, batchBytes);
    if (count === 0) return Infinity;
    return count >= batchSize || bytes >= (batchBytes ?? Infinity) ? 0 : oldestAt! + this.#flushMs - this.#now();
  }

  claim(): OutboxRecord[] {
    return this.#outbox.claim(this.#policy.stream, this.#policy.batchSize, this.#policy.batchBytes);
  }

  /** Up to `room` pending records besides `open` (a batch's own, pending again after a failed send and the oldest). */
  claimBeside(open: ReadonlyMap<number, OutboxRecord>, room: number): OutboxRecord[] {
    const claimed = this.#outbox.claim(this.#policy.stream, open.size + room, this.#policy.batchBytes).filter((r) => !open.has(r.seq));
    this.release(claimed.slice(room).map((r) => r.seq));
    return claimed.slice(0, room);
  }

  /** Hands claimed records back to pending (not sent after all). */
  release(seqs: readonly number[]): void {
    this.#outbox.release(this.#policy.stream, seqs);
  }

  /** Delivered: kept as completed (billing) or deleted (telemetry). */
  delivered(records: readonly OutboxRecord[]): void {
    const seqs = records.map((r) => r.seq);
    if (this.#policy.keepDelivered) this.#outbox.ack(this.#policy.stream, seqs);
    else this.#outbox.remove(this.#policy.stream, seqs);
  }

  /** A failed send: pending again with one more attempt counted (the records carry the stored count). */
  failed(records: OutboxRecord[], reason: string): void {
    this.#outbox.fail(this.#policy.stream, records, reason);
  }

  /** Refused for good: kept as failed, never sent again. */
  deadLetter(record: OutboxRecord, reason: string): void {
    this.#outbox.deadLetter(this.#policy.stream, [record.seq], reason);
  }
}
