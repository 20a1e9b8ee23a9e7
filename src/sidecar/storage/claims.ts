import type { Stream } from "./outbox.ts";

/**
 * The records being sent (the `sending` state), held in memory by stream: the file keeps them as pending, which is
 * what a restart must find anyway, so a claim costs no write (bench/: the drain).
 *
 * Beside each stream's set, the seq from which its next claim may start: every pending record below it is being
 * sent. Claims take the oldest records first, so the records in flight are mostly the head of the queue, and a
 * read of the head that starts there does not walk them again for every batch.
 */
export class Claims {
  readonly #sending = new Map<Stream, Set<number>>();
  readonly #scanFrom = new Map<Stream, number>();

  #of(stream: Stream): Set<number> {
    const seqs = this.#sending.get(stream) ?? new Set<number>();
    this.#sending.set(stream, seqs);
    return seqs;
  }

  /** Claimed: the oldest pending records of `stream` not being sent, in seq order. */
  add(stream: Stream, seqs: readonly number[]): void {
    const sending = this.#of(stream);
    for (const seq of seqs) sending.add(seq);
    // They were the first pending records not being sent: every pending record up to the last one is in flight now.
    if (seqs.length > 0) this.#scanFrom.set(stream, Math.max(this.scanFrom(stream), seqs.at(-1)! + 1));
  }

  /** Settled: delivered or dead-lettered, no longer pending at all. */
  settle(seqs: readonly number[]): void {
    for (const sending of this.#sending.values()) for (const seq of seqs) sending.delete(seq);
  }

  /** Pending again (a failed send, or not sent after all): the next claim starts no later than the lowest of them. */
  giveBack(seqs: readonly number[]): void {
    if (seqs.length === 0) return;
    const lowest = Math.min(...seqs);
    for (const [stream, sending] of this.#sending) {
      let had = false;
      for (const seq of seqs) had = sending.delete(seq) || had;
      if (had) this.#scanFrom.set(stream, Math.min(this.scanFrom(stream), lowest));
    }
  }

  /** The stream's records went (discarded): none of them is being sent. */
  clear(stream: Stream): void {
    this.#sending.delete(stream);
    this.#scanFrom.delete(stream);
  }

  has(stream: Stream, seq: number): boolean {
    return this.#sending.get(stream)?.has(seq) ?? false;
  }

  /** How many of the stream's records being sent have a seq of `from` or more. */
  countFrom(stream: Stream, from: number): number {
    let count = 0;
    for (const seq of this.#sending.get(stream) ?? []) if (seq >= from) count++;
    return count;
  }

  count(stream: Stream): number {
    return this.#sending.get(stream)?.size ?? 0;
  }

  /** Every pending record of `stream` below this seq is being sent. */
  scanFrom(stream: Stream): number {
    return this.#scanFrom.get(stream) ?? 0;
  }
}
