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

/** A round that cannot go on: its batches stay queued; wait, then try again. */
type Stalled = { kind: "retry"; reason: string; retryAfterMs: number | undefined };

/**
 * Moves the forward queue to the vendor's collector, oldest first: claims a round of batches, builds the requests
 * (transform.ts), sends each (transport.ts), and settles it by its outcome (outcome.ts): delivered or refused for
 * good, it leaves the queue; otherwise the round stops and the forwarder backs off (capped exponential with jitter,
 * Retry-After honoured, retry.ts) before the same batches go again. Nothing leaves the queue unsent but a refusal.
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

  /** One claimed round: each request settled in turn, until the first that must wait. */
  #round(): Promise<"idle" | "progress" | Stalled> {
    return this.#o.queue.round(ROUND_BATCHES, async ({ batches, done }) => {
      if (batches.length === 0) return "idle";
      for (const request of this.#requests(batches, REQUEST_BYTES)) {
        const stalled = await this.#settle(request, batches, done);
        if (stalled) return stalled;
      }
      return "progress";
    });
  }

  #requests(batches: readonly QueuedBatch[], maxBytes: number): ForwardRequest[] {
    const { organizationOf } = this.#o;
    return forwardRequests(batches, { allowedMetrics: this.#allowed, organizationOf, maxBytes });
  }

  /** Sends one request and takes its batches out of the queue when that is their end; a Stalled when it is not. */
  async #settle(
    request: ForwardRequest,
    batches: readonly QueuedBatch[],
    done: (seqs: readonly number[]) => Promise<void>,
  ): Promise<Stalled | undefined> {
    const { metrics, logger, transport } = this.#o;
    const { signal, seqs } = request;
    // The batches leave the queue: what the allowlist left out of them is counted once, here.
    const finish = async () => {
      metrics.filtered(request.droppedDataPoints);
      await done(seqs);
    };
    if (request.body === null) return void (await finish()); // nothing of them is forwarded (no allowed metric)
    const outcome = classifyResult(await transport.send(signal, request.body, this.#cut.signal));
    if (outcome.kind === "delivered") {
      this.#accepted = true;
      metrics.request(signal, "delivered");
      metrics.forwarded(signal, seqs.length);
      if (outcome.rejectedItems > 0)
        logger.warn({ signal, rejected: outcome.rejectedItems }, "the collector took a forwarded request but not all of its items");
      return void (await finish());
    }
    if (outcome.kind === "refused" && this.#accepted) {
      metrics.request(signal, "refused");
      if (seqs.length > 1) {
        // Which batch is it? Each alone: the others are delivered, the refused one dropped.
        const alone = this.#requests(
          batches.filter((b) => seqs.includes(b.seq)),
          0,
        );
        for (const single of alone) {
          const stalled = await this.#settle(single, batches, done);
          if (stalled) return stalled;
        }
        return undefined;
      }
      metrics.dropped(signal, 1);
      logger.error({ signal, seq: seqs[0], reason: outcome.reason }, "the collector refused a forwarded batch; it is dropped");
      return void (await finish());
    }
    metrics.request(signal, outcome.kind === "refused" ? "4xx" : outcome.label);
    return { kind: "retry", reason: outcome.reason, retryAfterMs: outcome.kind === "retry" ? outcome.retryAfterMs : undefined };
  }
}
