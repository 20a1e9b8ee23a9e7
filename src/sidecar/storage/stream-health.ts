import type { Logger } from "pino";
import type { Clock } from "../../clock.ts";

const SUMMARY_EVERY_MS = 10 * 60_000;

/**
 * A stream's last success and last error, and the rule that keeps blocked egress from flooding the log:
 * one warning when the stream starts failing, one info line when it recovers, and in between a summary
 * at most every ten minutes.
 */
export class StreamHealth {
  readonly #logger: Logger;
  readonly #now: Clock;
  #failingSince: number | null = null;
  #failuresSinceSummary = 0;
  #failuresTotal = 0;
  #lastSummaryAt = 0;
  lastSuccessAt: number | null = null;
  lastError: { at: number; message: string } | null = null;

  constructor(logger: Logger, stream: string, now: Clock = Date.now) {
    this.#logger = logger.child({ stream });
    this.#now = now;
  }

  failure(message: string): void {
    const now = this.#now();
    this.lastError = { at: now, message };
    this.#failuresTotal++;
    if (this.#failingSince === null) {
      this.#failingSince = now;
      this.#lastSummaryAt = now;
      this.#failuresSinceSummary = 0;
      this.#logger.warn({ reason: message }, "stream failing");
      return;
    }
    this.#failuresSinceSummary++;
    if (now - this.#lastSummaryAt >= SUMMARY_EVERY_MS) {
      this.#logger.warn(
        { reason: message, failures: this.#failuresSinceSummary, failingForSeconds: Math.round((now - this.#failingSince) / 1000) },
        "stream still failing",
      );
      this.#lastSummaryAt = now;
      this.#failuresSinceSummary = 0;
    }
  }

  success(): void {
    const now = this.#now();
    this.lastSuccessAt = now;
    if (this.#failingSince !== null) {
      this.#logger.info(
        { failures: this.#failuresTotal, failedForSeconds: Math.round((now - this.#failingSince) / 1000) },
        "stream recovered",
      );
      this.#failingSince = null;
      this.#failuresTotal = 0;
    }
  }
}
