import type { OutboxRecord } from "../storage/outbox.ts";

/**
 * Isolating a record the beacon keeps failing on (docs/sidecar.md, "Billing delivery"). A server error (a 5xx other than 503,
 * without Retry-After) may be the beacon's outage or one record it cannot store; only evidence tells them apart: the
 * beacon taking other records meanwhile. So a claimed batch is split after a few server errors (the halves are the
 * probes that find evidence), a half is split again only once other records got through since its batch was claimed,
 * and a record alone is dead-lettered only once other records got through between its first and its last server
 * error. During an outage nothing gets through: nothing is dead-lettered, a batch is split at most once, and a round
 * stops at its first failure (Shipper.#round): one request per backoff step.
 */

/** Server errors in a row after which a claimed batch is split even with no evidence yet. */
const SPLIT_AFTER = 3;
/** Server errors in a row, alone and with others delivered meanwhile, after which a record is dead-lettered. */
const DEAD_LETTER_AFTER = 3;

/** A piece of a claimed batch, sent as one request. */
export interface Part {
  records: OutboxRecord[];
  /** Server errors answered to this part in a row. */
  serverErrors: number;
  /** Claimed as it is, not a half: it may split once without evidence, to look for some. */
  claimed: boolean;
  /** The stream's deliveries when this part's claimed batch was made. */
  deliveriesAtStart: number;
  /** The stream's deliveries at this part's first server error in a row. */
  deliveriesAtFirstError: number;
}

export function claimedPart(records: OutboxRecord[], deliveries: number): Part {
  return { records, serverErrors: 0, claimed: true, deliveriesAtStart: deliveries, deliveriesAtFirstError: deliveries };
}

/**
 * A part's two halves (for a refusal, or to isolate a server error), in order. They count evidence from when their
 * claimed batch was made: the beacon taking other records since then is what split them, and splits them further.
 */
export function halves(part: Part, deliveries: number): [Part, Part] {
  const half = Math.ceil(part.records.length / 2);
  const made = (records: OutboxRecord[]): Part => ({
    ...claimedPart(records, deliveries),
    claimed: false,
    deliveriesAtStart: part.deliveriesAtStart,
  });
  return [made(part.records.slice(0, half)), made(part.records.slice(half))];
}

export type Verdict = "split" | "dead-letter" | "retry";

/** Counts a server error to `part` and says what follows, `deliveries` being the stream's deliveries so far. */
export function afterServerError(part: Part, deliveries: number): Verdict {
  if (part.serverErrors++ === 0) part.deliveriesAtFirstError = deliveries;
  if (part.records.length > 1) {
    const othersGotThrough = deliveries > part.deliveriesAtStart;
    return othersGotThrough || (part.claimed && part.serverErrors >= SPLIT_AFTER) ? "split" : "retry";
  }
  const othersGotThroughMeanwhile = deliveries > part.deliveriesAtFirstError;
  return othersGotThroughMeanwhile && part.serverErrors >= DEAD_LETTER_AFTER ? "dead-letter" : "retry";
}

/** Every part stuck without evidence: the batch should take in more records as a probe, when there are any. */
export const needsProbe = (parts: readonly Part[]): boolean => parts.length > 0 && parts.every((p) => p.serverErrors >= SPLIT_AFTER);
