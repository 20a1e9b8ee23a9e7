import pRetry, { AbortError } from "p-retry";
import type { Logger } from "pino";
import { backoff, sleep } from "../egress/backoff.ts";
import type { AnswerRule } from "../egress/answer-rules.ts";
import type { BeaconTransport } from "../egress/beacon-client.ts";
import type { Outbox, OutboxRecord, Stream } from "../storage/outbox.ts";
import type { StreamHealth } from "../storage/stream-health.ts";
import { isDiskFull } from "../storage/disk-space.ts";
import { classify, classifyError, RetryableDeliveryError, type Outcome } from "./delivery.ts";
import { afterServerError, claimedPart, halves, needsProbe, type Part } from "./isolation.ts";

/** How one stream is shipped: where to, in what batches, in what envelope. */
export interface StreamPolicy {
  stream: Stream;
  path: string;
  batchSize: number;
  /** About how many body bytes one request may carry (a single larger record still goes alone). */
  batchBytes?: number;
  /** What the beacon's 2xx must be for the batch to count as delivered: the stream's entry in `beaconAnswers`. */
  answer: AnswerRule;
  /** Billing keeps delivered records (export, audit) until retention prunes them; telemetry deletes them. */
  keepDelivered: boolean;
  /** The request body (JSON text) that carries `records`. */
  buildPayload(records: readonly OutboxRecord[]): string;
}

export interface ShipperOptions {
  policy: StreamPolicy;
  outbox: Outbox;
  client: BeaconTransport;
  health: StreamHealth;
  logger: Logger;
  /** The current license token, sent as Bearer when there is one. */
  token: () => string | undefined;
  /** Called on 401: the token is stale; verify the license again. */
  onUnauthorized: () => void;
  flushMs: number;
  /** Batches in flight at once while deliveries succeed. */
  concurrency: number;
  minBackoffMs: number;
  maxBackoffMs: number;
  now?: () => number;
}

const MAX_RETRY_AFTER_MS = 60 * 60_000;

/**
 * Moves one stream from the outbox to the beacon: claims a batch when it is full or its oldest record has
 * waited `flushMs`, sends it, and acks, retries with capped exponential backoff (honouring Retry-After), or
 * splits a refused batch to dead-letter only the bad records.
 */
export class Shipper {
  readonly #o: ShipperOptions;
  readonly #now: () => number;
  /** Aborted by stop(): ends waits and backoff at once. */
  readonly #stopping = new AbortController();
  /** Aborted when the drain grace runs out: cuts an in-flight request. */
  readonly #cutRequests = new AbortController();
  #wake: (() => void) | null = null;
  readonly #inFlight = new Set<Promise<void>>();
  /** Batches retrying after a failed send. Their records are pending again in the outbox: nothing is claimed beside them. */
  readonly #retrying = new Set<Map<number, OutboxRecord>>();
  #running: Promise<void> | null = null;
  /** Claimed records the outbox could not hand back yet (its disk was full): handed back before the next claim. */
  readonly #stranded = new Set<number>();
  /** False from a failed attempt until the next delivery: only one batch is in flight meanwhile. */
  #healthy = true;
  /** After an unexpected error, no new batch before this time (ms). */
  #pausedUntil = 0;
  /** Batches (or parts) delivered since start: the evidence that the beacon takes records (isolation.ts). */
  #deliveries = 0;

  constructor(options: ShipperOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  start(): void {
    this.#running ??= this.#loop();
  }

  /** New records were enqueued: look again now rather than at the next timer. */
  wake(): void {
    this.#wake?.();
  }

  /** Stops taking batches; an in-flight send gets `graceMs` to finish, then is cut and its records released. */
  async stop(graceMs: number): Promise<void> {
    this.#stopping.abort();
    this.wake();
    const cut = setTimeout(() => this.#cutRequests.abort(), graceMs);
    await this.#running;
    clearTimeout(cut);
  }

  async #loop(): Promise<void> {
    while (!this.#stopping.signal.aborted) {
      if (this.#inFlight.size >= this.#capacity()) {
        await this.#idle(Infinity); // a finishing batch wakes the loop
      } else if (this.#stranded.size > 0 && !this.#release([])) {
        await sleep(this.#o.maxBackoffMs, this.#stopping.signal);
      } else {
        const waitMs = this.#nextBatchInMs();
        if (waitMs > 0) await this.#idle(waitMs);
        else this.#launch();
      }
    }
    await Promise.all(this.#inFlight);
  }

  /**
   * A healthy stream keeps several batches in flight (the beacon works on one while the next travels);
   * a failing one probes with a single batch, so an outage is never met with a burst.
   */
  #capacity(): number {
    return this.#healthy && this.#retrying.size === 0 ? this.#o.concurrency : 1;
  }

  /** When the next batch is due: at once when full, else once its oldest record has waited flushMs; never sooner than a pause ends. */
  #nextBatchInMs(): number {
    const { policy, flushMs } = this.#o;
    const pausedMs = this.#pausedUntil - this.#now();
    const { count, bytes, oldestAt } = this.#o.outbox.stats.pendingHead(policy.stream, policy.batchSize);
    const full = count >= policy.batchSize || bytes >= (policy.batchBytes ?? Infinity);
    return Math.max(pausedMs, count === 0 ? Infinity : full ? 0 : oldestAt! + flushMs - this.#now());
  }

  /** Claims the next batch and ships it beside the others in flight. */
  #launch(): void {
    const { outbox, policy } = this.#o;
    // Async so that a claim that throws (a full disk) rejects `shipping` instead of ending the loop.
    const shipping: Promise<void> = (async () => this.#ship(outbox.claim(policy.stream, policy.batchSize, policy.batchBytes)))()
      .catch((err) => this.#shippingFailed(err))
      .finally(() => {
        this.#inFlight.delete(shipping);
        this.wake();
      });
    this.#inFlight.add(shipping);
  }

  /**
   * A full disk, a bug or a corrupt record must not stop a stream for good: the batch is released (or kept
   * claimed until the outbox can be written again; the beacon dedups a re-send); retry later.
   */
  #shippingFailed(err: unknown): void {
    if (isDiskFull(err)) {
      this.#o.health.failure(`data dir full: delivery state could not be written (${(err as Error).message})`);
    } else {
      this.#o.logger.error({ err, stream: this.#o.policy.stream }, "shipping failed unexpectedly; retrying after backoff");
      this.#o.health.failure((err as Error).message);
    }
    this.#healthy = false;
    this.#pausedUntil = this.#now() + this.#o.maxBackoffMs;
  }

  /** Waits for `ms`, a wake() or stop(); Infinity waits for either of the latter. */
  #idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
      const signal = this.#stopping.signal;
      function done() {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      }
      this.#wake = done;
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /** Delivers a claimed batch, retrying until every record is acked or dead-lettered, or until stop(). */
  async #ship(records: OutboxRecord[]): Promise<void> {
    const open = new Map(records.map((r) => [r.seq, r]));
    const batch = { parts: [claimedPart(records, this.#deliveries)] };
    try {
      await pRetry(() => this.#round(batch, open), {
        ...backoff(this.#o.minBackoffMs, this.#o.maxBackoffMs, this.#stopping.signal),
        // With other batches in flight, a failing one steps back (its records pending again) rather than
        // retrying beside them: one batch probes a failing beacon.
        shouldRetry: ({ error }) => error instanceof RetryableDeliveryError && this.#inFlight.size <= 1,
        onFailedAttempt: async ({ error, retryDelay }) => {
          const retryAfter = (error as RetryableDeliveryError).retryAfterMs ?? 0;
          // The beacon's Retry-After beats our own backoff, even past maxBackoff (bounded by an hour).
          if (retryAfter > retryDelay) await sleep(Math.min(retryAfter, MAX_RETRY_AFTER_MS) - retryDelay, this.#stopping.signal);
        },
      });
    } catch (err) {
      if (err instanceof RetryableDeliveryError) {
        // Stepped back for the batch that probes; no new batch sooner than a first retry would be.
        this.#pausedUntil = Math.max(this.#pausedUntil, this.#now() + this.#o.minBackoffMs);
      } else if (!this.#stopping.signal.aborted) throw err;
    } finally {
      this.#retrying.delete(open);
      // Whatever is still open was not delivered (or its ack could not be written): back to pending.
      if (open.size > 0) this.#release([...open.keys()]);
    }
  }

  /**
   * Hands claimed records back to pending. When the outbox cannot be written (a full disk) they stay claimed,
   * kept here, and are handed back at the next round. False while that still fails.
   */
  #release(seqs: readonly number[]): boolean {
    for (const seq of seqs) this.#stranded.add(seq);
    try {
      this.#o.outbox.release([...this.#stranded]);
      this.#stranded.clear();
      return true;
    } catch (err) {
      this.#o.health.failure(
        `${isDiskFull(err) ? "data dir full: " : ""}claimed records could not be handed back yet (${(err as Error).message})`,
      );
      return false;
    }
  }

  /**
   * One attempt at what is left of a batch: its parts in turn, until one fails while none has got through in this
   * round (then the beacon, not a record, is failing: one request per backoff step). A refused part is halved until
   * the refused record is alone, which is dead-lettered; a server error may split a part or dead-letter a record
   * alone (isolation.ts). Throws RetryableDeliveryError while parts are left, failed ones last next time.
   */
  async #round(batch: { parts: Part[] }, open: Map<number, OutboxRecord>): Promise<void> {
    if (needsProbe(batch.parts)) this.#probe(batch, open);
    const queue = batch.parts;
    const failed: Part[] = [];
    let delivered = false;
    let failure: RetryableDeliveryError | undefined;
    try {
      while (queue.length > 0 && (failure === undefined || delivered)) {
        const part = queue.shift()!;
        const outcome = await this.#send(part.records);
        if (outcome.kind === "delivered") {
          this.#delivered(part.records, open);
          delivered = true;
        } else if (outcome.kind === "rejected") {
          if (part.records.length > 1) queue.unshift(...halves(part, this.#deliveries));
          else this.#deadLetter(part.records[0]!, open, outcome.reason);
        } else {
          if (outcome.kind === "unauthorized") this.#o.onUnauthorized(); // a fresh token is on its way
          failure = this.#failedAttempt(part.records, open, outcome.reason, outcome.kind === "retry" ? outcome.retryAfterMs : undefined);
          const verdict = outcome.kind === "retry" && outcome.serverError ? afterServerError(part, this.#deliveries) : "retry";
          if (verdict === "split") queue.unshift(...halves(part, this.#deliveries));
          else if (verdict === "dead-letter")
            this.#deadLetter(
              part.records[0]!,
              open,
              `${outcome.reason} (alone, ${part.serverErrors} times, while other records were delivered)`,
            );
          else failed.push(part);
        }
      }
    } finally {
      batch.parts = [...queue, ...failed];
    }
    if (failure && batch.parts.length > 0) throw failure;
  }

  /**
   * Takes pending records into a batch whose parts all wait for evidence (isolation.ts), as a part of their own sent
   * first: if the beacon takes them, it is up, and what still fails beside them is the records' own doing.
   */
  #probe(batch: { parts: Part[] }, open: Map<number, OutboxRecord>): void {
    const { outbox, policy } = this.#o;
    const room = policy.batchSize - open.size;
    if (room <= 0) return;
    // The batch's own records are pending again (outbox.fail) and the oldest: claimed along, and skipped.
    const claimed = outbox.claim(policy.stream, open.size + room, policy.batchBytes).filter((r) => !open.has(r.seq));
    const fresh = claimed.slice(0, room);
    this.#release(claimed.slice(room).map((r) => r.seq));
    if (fresh.length === 0) return;
    for (const record of fresh) open.set(record.seq, record);
    batch.parts.unshift(claimedPart(fresh, this.#deliveries));
  }

  #delivered(records: readonly OutboxRecord[], open: Map<number, OutboxRecord>): void {
    const { outbox, policy } = this.#o;
    const seqs = records.map((r) => r.seq);
    if (policy.keepDelivered) outbox.ack(policy.stream, seqs);
    else outbox.remove(policy.stream, seqs);
    for (const seq of seqs) open.delete(seq);
    this.#deliveries++;
    this.#o.health.success();
    this.#healthy = true;
  }

  /** Refused for good, or isolated as the one record the beacon keeps failing on: kept as failed, never sent again. */
  #deadLetter(record: OutboxRecord, open: Map<number, OutboxRecord>, reason: string): void {
    this.#o.outbox.deadLetter([record.seq], reason);
    open.delete(record.seq);
    this.#o.logger.warn(
      { stream: this.#o.policy.stream, recordId: record.recordId, reason },
      "record refused by the beacon, kept as failed",
    );
  }

  /** Counts a failed send against `records` (pending again, held by this batch for its retry); the error to throw. */
  #failedAttempt(records: OutboxRecord[], open: Map<number, OutboxRecord>, reason: string, retryAfterMs?: number): RetryableDeliveryError {
    this.#o.outbox.fail(records, reason);
    this.#retrying.add(open);
    this.#o.health.failure(reason);
    this.#healthy = false;
    return new RetryableDeliveryError(reason, retryAfterMs);
  }

  async #send(records: readonly OutboxRecord[]): Promise<Outcome> {
    const { client, policy } = this.#o;
    try {
      const response = await client.post(policy.path, policy.buildPayload(records), {
        token: this.#o.token(),
        signal: this.#cutRequests.signal,
        audit: { stream: policy.stream, records: records.length },
      });
      return classify(response, policy.answer, records.length);
    } catch (err) {
      if (this.#cutRequests.signal.aborted) throw new AbortError("stopping");
      return classifyError(err);
    }
  }
}
