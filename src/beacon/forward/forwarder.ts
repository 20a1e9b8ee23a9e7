import type { Logger } from "pino";
import { MiB } from "../../http/capped-answer.ts";
import { classifyResult } from "./outcome.ts";
import type { ForwardMetrics } from "./metrics.ts";
import type { ForwardQueue, QueuedBatch } from "./queue.ts";
import { backoffDelay, sleep } from "./retry.ts";
import { forwardRequests, type ForwardRequest } from "./transform.ts";
import type { CollectorTransport } from "./transport.ts";

/** Batches one round claims; fewer when the queue holds fewer. */
const ROUND_BATCHES = 100;
/** About the most stored JSON one request carries (a larger batch goes alone); collectors take 20 MiB by default. */
const REQUEST_BYTES = 4 * MiB;
/** How often an idle forwarder looks at the queue: another replica may have stored batches. */
const POLL_MS = 1_000;

export interface ForwarderOptions {
  queue: ForwardQueue;
  transport: CollectorTransport;
  /** telemetry.forward.metrics: the metric names forwarded; every other metric is left out. */
  allowedMetrics: readonly string[];
  /** The organization a license belongs to (undefined: a license the beacon no longer has). */
  organizationOf: (licenseId: string) => string | undefined;
  metrics: ForwardMetrics;
  logger: Logger;
  minBackoffMs: number;
  maxBackoffMs: number;
  random?: () => number;
}

/**
 * A batch the collector refused alone is dropped even before the collector has taken anything, once it is this old
 * (a day of refusals): forwarding cannot stall for good on batches no collector takes. They stay in otlp_batches.
 */
const REFUSED_MAX_AGE_MS = 24 * 60 * 60_000;

/** A round that cannot go on: its batches stay queued; wait, then try again. */
type Stalled = { kind: "retry"; reason: string; retryAfterMs: number | undefined };

/** A claimed round: its batches, how they leave the queue, and those the collector refused alone so far. */
type Round = {
  batches: readonly QueuedBatch[];
  done: (seqs: readonly number[]) => Promise<void>;
  refused: { batch: QueuedBatch; droppedDataPoints: number; reason: string }[];
};

/**
 * Moves the forward queue to the vendor's collector, oldest first: claims a round of batches, builds the requests
 * (transform.ts), sends each (transport.ts), and settles it by its outcome (outcome.ts): delivered, it leaves the
 * queue; refused, its batches are tried alone and those refused alone are settled at the round's end; otherwise the
 * round stops and the forwarder backs off (capped exponential with jitter, Retry-After honoured, retry.ts) before the
 * same batches go again. Nothing leaves the queue unsent but a refusal.
 */
export class Forwarder {
  readonly #o: ForwarderOptions;
  readonly #allowed: ReadonlySet<string>;
  /** Aborted by stop(): ends waits at once. */
  readonly #stopping = new AbortController();
  /** Aborted when the stop's grace runs out: cuts the request in flight (its batches stay queued). */
  readonly #cut = new AbortController();
  #wakeUp = new AbortController();
  #running: Promise<void> | undefined;
  /** Whether this collector has taken a request since start: until it has, a refusal is not a batch's fault. */
  #accepted = false;
  /** Until then, the batches it refused alone: not sent alone again (one refusing everything gets each once). */
  readonly #refusedAlone = new Set<number>();

  constructor(options: ForwarderOptions) {
    this.#o = options;
    this.#allowed = new Set(options.allowedMetrics);
  }

  start(): void {
    this.#running ??= this.#loop();
  }

  /** A batch was queued here: look now rather than at the next poll (a backoff is not cut short). */
  wake(): void {
    this.#wakeUp.abort();
  }

  async stop(graceMs: number): Promise<void> {
    this.#stopping.abort();
    const cut = setTimeout(() => this.#cut.abort(), graceMs);
    await this.#running;
    clearTimeout(cut);
  }

  async #loop(): Promise<void> {
    let failures = 0;
    while (!this.#stopping.signal.aborted) {
      let result: "idle" | "progress" | Stalled;
      try {
        result = await this.#round();
      } catch (err) {
        if (this.#stopping.signal.aborted) break;
        this.#o.logger.error({ err }, "telemetry forwarding round failed; retrying after backoff");
        result = { kind: "retry", reason: (err as Error).message, retryAfterMs: undefined };
      }
      if (result === "progress") failures = 0;
      else if (result === "idle") {
        failures = 0;
        await this.#idle(POLL_MS);
      } else {
        failures++;
        const waitMs = backoffDelay(failures, { ...this.#o, retryAfterMs: result.retryAfterMs });
        this.#o.logger.warn({ reason: result.reason, failures, retryInMs: waitMs }, "telemetry forwarding failed; the batches stay queued");
        await sleep(waitMs, this.#stopping.signal);
      }
    }
  }

  async #idle(ms: number): Promise<void> {
    if (!this.#wakeUp.signal.aborted) await sleep(ms, AbortSignal.any([this.#wakeUp.signal, this.#stopping.signal]));
    this.#wakeUp = new AbortController();
  }

  /** One claimed round: each request settled in turn, until the first that must wait; then the refused batches. */
  #round(): Promise<"idle" | "progress" | Stalled> {
    return this.#o.queue.round(ROUND_BATCHES, async ({ batches, done }) => {
      if (batches.length === 0) return "idle";
      const round: Round = { batches, done, refused: [] };
      let stalled: Stalled | undefined;
      for (const request of this.#requests(batches, REQUEST_BYTES)) {
        stalled = await this.#settle(request, round);
        if (stalled) break;
      }
      const kept = await this.#settleRefused(round);
      // An outage's stall first: its Retry-After is honoured.
      return stalled ?? kept ?? "progress";
    });
  }

  #requests(batches: readonly QueuedBatch[], maxBytes: number): ForwardRequest[] {
    const { organizationOf } = this.#o;
    return forwardRequests(batches, { allowedMetrics: this.#allowed, organizationOf, maxBytes });
  }

  /**
   * Sends one request and takes its batches out of the queue when delivered; a Stalled when the round must wait. A
   * refused request of several batches is sent again batch by batch (a batch already refused alone is not sent
   * again), so one license's refused batch never holds up the others'; what is refused alone is noted in the round.
   */
  async #settle(request: ForwardRequest, round: Round): Promise<Stalled | undefined> {
    const { metrics, logger, transport } = this.#o;
    const { signal, seqs } = request;
    // The batches leave the queue: what the allowlist left out of them is counted once, here.
    const finish = async () => {
      metrics.filtered(request.droppedDataPoints);
      await round.done(seqs);
    };
    if (request.body === null) return void (await finish()); // nothing of them is forwarded (no allowed metric)
    const outcome = classifyResult(await transport.send(signal, request.body, this.#cut.signal));
    if (outcome.kind === "delivered") {
      // Refusals before the collector's first acceptance are no evidence against a batch: forget them.
      if (!this.#accepted) this.#refusedAlone.clear();
      this.#accepted = true;
      metrics.request(signal, "delivered");
      metrics.forwarded(signal, seqs.length);
      if (outcome.rejectedItems > 0)
        logger.warn({ signal, rejected: outcome.rejectedItems }, "the collector took a forwarded request but not all of its items");
      return void (await finish());
    }
    if (outcome.kind === "retry") {
      metrics.request(signal, outcome.label);
      return { kind: "retry", reason: outcome.reason, retryAfterMs: outcome.retryAfterMs };
    }
    metrics.request(signal, "refused");
    const mine = round.batches.filter((b) => seqs.includes(b.seq));
    for (const batch of mine) {
      if (seqs.length > 1 && !this.#refusedAlone.has(batch.seq)) {
        const [alone] = this.#requests([batch], 0);
        const stalled = await this.#settle(alone!, round);
        if (stalled) return stalled;
      } else {
        this.#refusedAlone.add(batch.seq);
        const droppedDataPoints = seqs.length > 1 ? this.#requests([batch], 0)[0]!.droppedDataPoints : request.droppedDataPoints;
        round.refused.push({ batch, droppedDataPoints, reason: outcome.reason });
      }
    }
    return undefined;
  }

  /**
   * The batches the collector refused alone this round. Once it has taken anything since start, the fault is theirs:
   * dropped (logged, counted). Until then it may be misconfigured: they stay queued and the forwarder backs off, but
   * only up to REFUSED_MAX_AGE_MS, so a batch no collector takes cannot sit at the head of the queue for good.
   */
  async #settleRefused(round: Round): Promise<Stalled | undefined> {
    const { metrics, logger } = this.#o;
    const now = Date.now();
    const drop = round.refused.filter(({ batch }) => this.#accepted || now - Date.parse(batch.receivedAt) >= REFUSED_MAX_AGE_MS);
    for (const { batch, droppedDataPoints, reason } of drop) {
      metrics.dropped(batch.signal, 1);
      metrics.filtered(droppedDataPoints);
      this.#refusedAlone.delete(batch.seq);
      const why = this.#accepted ? "it is dropped" : "it was refused for a day while the collector took nothing; it is dropped";
      logger.error(
        { signal: batch.signal, seq: batch.seq, licenseId: batch.licenseId, reason },
        `the collector refused a forwarded batch; ${why}`,
      );
    }
    if (drop.length > 0) await round.done(drop.map(({ batch }) => batch.seq));
    const kept = round.refused.length - drop.length;
    if (kept === 0) return undefined;
    const reason = `the collector refused each of ${kept} batches alone and has taken nothing since the beacon started (misconfigured?)`;
    return { kind: "retry", reason, retryAfterMs: undefined };
  }
}
