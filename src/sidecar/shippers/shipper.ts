import type { Logger } from "pino";
import type { Clock } from "../../clock.ts";
import type { AnswerRule } from "../egress/answer-rules.ts";
import type { BeaconTransport } from "../egress/beacon-client.ts";
import type { Outbox, OutboxRecord, Stream } from "../storage/outbox.ts";
import type { StreamHealth } from "../storage/stream-health.ts";
import { isDiskFull } from "../storage/disk-space.ts";
import { BatchSource } from "./batch-source.ts";
import { ConcurrencyGate } from "./concurrency-gate.ts";
import { classify, classifyError, RetryableDeliveryError, type Outcome } from "./delivery.ts";
import { MAX_RETRY_AFTER_MS, retryLoop } from "./retry-loop.ts";
import { claimedBatch, sendRound, type ClaimedBatch, type RoundSteps } from "./splitter.ts";

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
  /** The request body (JSON text, or its UTF-8 bytes) that carries `records`. */
  buildPayload(records: readonly OutboxRecord[]): string | Buffer;
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
  now?: Clock;
}

/**
 * Moves one stream from the outbox to the beacon: takes a batch from its source when one is due and the gate has
 * room, sends it, and settles each record: delivered, retried with capped exponential backoff (honouring
 * Retry-After), or, for a refused batch, split to dead-letter only the bad records (splitter.ts).
 */
export class Shipper {
  readonly #o: ShipperOptions;
  readonly #now: Clock;
  readonly #source: BatchSource;
  readonly #gate: ConcurrencyGate;
  /** Aborted by stop(): ends waits and backoff at once. */
  readonly #stopping = new AbortController();
  /** Aborted when the drain grace runs out: cuts an in-flight request. */
  readonly #cutRequests = new AbortController();
  /**
   * Set by wake(): ends the loop's current wait (a wake between waits ends the next one at once). A flag and a
   * resolver, not an AbortController: every OTLP request wakes the shipper, and abort() builds a DOMException.
   */
  #woken = false;
  #endWait: (() => void) | undefined;
  #running: Promise<void> | null = null;
  /** Batches (or parts) delivered since start: the evidence that the beacon takes records (isolation.ts). */
  #deliveries = 0;

  constructor(options: ShipperOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#source = new BatchSource({ ...options, now: this.#now });
    this.#gate = new ConcurrencyGate(options.concurrency, this.#now);
  }

  start(): void {
    this.#running ??= this.#loop();
  }

  /** New records were enqueued: look again now rather than at the next timer. */
  wake(): void {
    this.#woken = true;
    this.#endWait?.();
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
      if (this.#gate.full()) {
        await this.#idle(Infinity); // a finishing batch wakes the loop
      } else {
        const waitMs = Math.max(this.#gate.pausedMs(), this.#source.dueInMs());
        if (waitMs > 0) await this.#idle(waitMs);
        else this.#launch();
      }
    }
    await this.#gate.drained();
  }

  /** Waits for `ms` (Infinity: until woken), a wake() or stop(); a wake() since the last wait ends it at once. */
  async #idle(ms: number): Promise<void> {
    if (!this.#woken) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.#endWait = resolve;
        if (Number.isFinite(ms)) timer = setTimeout(resolve, ms);
      });
      clearTimeout(timer);
    }
    this.#woken = false;
    this.#endWait = undefined;
  }

  /** Claims the next batch and ships it beside the others in flight. */
  #launch(): void {
    // Async so that a claim that throws (a full disk) rejects `shipping` instead of ending the loop.
    const shipping = (async () => this.#ship(this.#source.claim()))().catch((err) => this.#shippingFailed(err));
    this.#gate.run(shipping, () => this.wake());
  }

  /**
   * A full disk, a bug or a corrupt record must not stop a stream for good: the batch is released (the beacon
   * dedups a re-send); retry later.
   */
  #shippingFailed(err: unknown): void {
    if (isDiskFull(err)) {
      this.#o.health.failure(`data dir full: delivery state could not be written (${(err as Error).message})`);
    } else {
      this.#o.logger.error({ err, stream: this.#o.policy.stream }, "shipping failed unexpectedly; retrying after backoff");
      this.#o.health.failure((err as Error).message);
    }
    this.#gate.failed();
    this.#gate.pauseFor(this.#o.maxBackoffMs);
  }

  /** Delivers a claimed batch, retrying until every record is acked or dead-lettered, or until stop(). */
  async #ship(records: OutboxRecord[]): Promise<void> {
    const batch = claimedBatch(records, this.#deliveries);
    const steps = this.#steps(batch);
    const schedule = { minMs: this.#o.minBackoffMs, maxMs: this.#o.maxBackoffMs, signal: this.#stopping.signal };
    try {
      // With other batches in flight, a failing one steps back (its records pending again) rather than retrying
      // beside them: one batch probes a failing beacon.
      await retryLoop(
        () => sendRound(batch, steps),
        schedule,
        (error) => (error instanceof RetryableDeliveryError && this.#gate.alone() ? (error.retryAfterMs ?? 0) : undefined),
      );
    } catch (err) {
      if (err instanceof RetryableDeliveryError) {
        // Stepped back for the batch that probes; no new batch sooner than a first retry would be (or the beacon asks).
        this.#gate.pauseFor(Math.max(this.#o.minBackoffMs, Math.min(err.retryAfterMs ?? 0, MAX_RETRY_AFTER_MS)));
      } else if (!this.#stopping.signal.aborted) throw err;
    } finally {
      this.#gate.settled(batch);
      // Whatever is still open was not delivered (or its ack could not be written): back to pending.
      if (batch.open.size > 0) this.#source.release([...batch.open.keys()]);
    }
  }

  /** What a round of `batch` does to its records and to the stream. */
  #steps(batch: ClaimedBatch): RoundSteps {
    const { health, logger, policy } = this.#o;
    return {
      batchSize: policy.batchSize,
      send: (records) => this.#send(records),
      deliveries: () => this.#deliveries,
      delivered: (records) => {
        this.#source.delivered(records);
        this.#deliveries++;
        health.success();
        this.#gate.delivered();
      },
      deadLetter: (record, reason) => {
        this.#source.deadLetter(record, reason);
        logger.warn({ stream: policy.stream, recordId: record.recordId, reason }, "record refused by the beacon, kept as failed");
      },
      failed: (records, reason) => {
        this.#source.failed(records, reason);
        this.#gate.failed(batch);
        health.failure(reason);
      },
      unauthorized: () => this.#o.onUnauthorized(),
      claimBeside: (open, room) => this.#source.claimBeside(open, room),
    };
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
      if (this.#cutRequests.signal.aborted) throw err; // stopping: the records go back to pending
      return classifyError(err);
    }
  }
}
