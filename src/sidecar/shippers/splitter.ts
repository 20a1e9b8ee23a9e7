import type { OutboxRecord } from "../storage/outbox.ts";
import { RetryableDeliveryError, type Outcome } from "./delivery.ts";
import { afterServerError, claimedPart, halves, needsProbe, type Part } from "./isolation.ts";

/** A claimed batch on its way: the records not yet settled, and the parts they are sent in. */
export interface ClaimedBatch {
  open: Map<number, OutboxRecord>;
  parts: Part[];
}

/** What a round does to records and to the stream; the Shipper provides it. */
export interface RoundSteps {
  batchSize: number;
  send(records: readonly OutboxRecord[]): Promise<Outcome>;
  /** Batches (or parts) delivered since start: the evidence that the beacon takes records (isolation.ts). */
  deliveries(): number;
  delivered(records: readonly OutboxRecord[]): void;
  deadLetter(record: OutboxRecord, reason: string): void;
  /** Counts a failed send against `records` (pending again, held for the retry). */
  failed(records: OutboxRecord[], reason: string): void;
  /** The token is stale: verify the license again (a fresh one is on its way). */
  unauthorized(): void;
  claimBeside(open: ReadonlyMap<number, OutboxRecord>, room: number): OutboxRecord[];
}

export function claimedBatch(records: OutboxRecord[], deliveries: number): ClaimedBatch {
  return { open: new Map(records.map((r) => [r.seq, r])), parts: [claimedPart(records, deliveries)] };
}

/**
 * One attempt at what is left of a batch: its parts in turn, until one fails while none has got through in this
 * round (then the beacon, not a record, is failing: one request per backoff step). A refused part is halved until
 * the refused record is alone, which is dead-lettered; a server error may split a part or dead-letter a record
 * alone (isolation.ts). Throws RetryableDeliveryError while parts are left, failed ones last next time.
 */
export async function sendRound(batch: ClaimedBatch, steps: RoundSteps): Promise<void> {
  if (needsProbe(batch.parts)) probe(batch, steps);
  const queue = batch.parts;
  const failedParts: Part[] = [];
  const settle = (record: OutboxRecord) => batch.open.delete(record.seq);
  const deadLetter = (record: OutboxRecord, reason: string) => {
    steps.deadLetter(record, reason);
    settle(record);
  };
  let delivered = false;
  let failure: RetryableDeliveryError | undefined;
  try {
    while (queue.length > 0 && (failure === undefined || delivered)) {
      const part = queue.shift()!;
      const outcome = await steps.send(part.records);
      if (outcome.kind === "delivered") {
        steps.delivered(part.records);
        part.records.forEach(settle);
        delivered = true;
      } else if (outcome.kind === "rejected") {
        if (part.records.length > 1) queue.unshift(...halves(part, steps.deliveries()));
        else deadLetter(part.records[0]!, outcome.reason);
      } else {
        if (outcome.kind === "unauthorized") steps.unauthorized();
        steps.failed(part.records, outcome.reason);
        failure = new RetryableDeliveryError(outcome.reason, outcome.kind === "retry" ? outcome.retryAfterMs : undefined);
        const verdict = outcome.kind === "retry" && outcome.serverError ? afterServerError(part, steps.deliveries()) : "retry";
        if (verdict === "split") queue.unshift(...halves(part, steps.deliveries()));
        else if (verdict === "dead-letter")
          deadLetter(part.records[0]!, `${outcome.reason} (alone, ${part.serverErrors} times, while other records were delivered)`);
        else failedParts.push(part);
      }
    }
  } finally {
    batch.parts = [...queue, ...failedParts];
  }
  if (failure && batch.parts.length > 0) throw failure;
}

/**
 * Takes pending records into a batch whose parts all wait for evidence (isolation.ts), as a part of their own sent
 * first: if the beacon takes them, it is up, and what still fails beside them is the records' own doing.
 */
function probe(batch: ClaimedBatch, steps: RoundSteps): void {
  const room = steps.batchSize - batch.open.size;
  if (room <= 0) return;
  const fresh = steps.claimBeside(batch.open, room);
  if (fresh.length === 0) return;
  for (const record of fresh) batch.open.set(record.seq, record);
  batch.parts.unshift(claimedPart(fresh, steps.deliveries()));
}
