import { AnswerTooLargeError } from "../../http/capped-answer.ts";
import { describeRemoteError } from "../../remote-answer.ts";
import { answerProblem, type AnswerRule } from "../egress/answer-rules.ts";
import { BeaconUnreachableError, type BeaconResponse } from "../egress/beacon-client.ts";

/**
 * What a send's result means for the records in it:
 * - delivered: a 2xx its stream's answer rule takes (answer-rules.ts): ack them;
 * - rejected: the beacon refuses the content (400, 413, 422): split the batch to find the bad record;
 * - unauthorized: the token is bad (401): verify the license again, then retry;
 * - retry: anything else (unreachable, an answer past the client's cap, 403 license refused, 404 wrong URL, 408, 429,
 *   5xx, a 2xx that is HTML or lacks the stream's documented answer): not known to be the records' fault, so back off
 *   and send them again. `serverError` marks a 5xx other than 503 and without Retry-After: maybe an outage, maybe one record the beacon cannot store, which the
 *   shipper isolates only with evidence (isolation.ts). 503, 429 and Retry-After say "overload", never "poison".
 */
export type Outcome =
  | { kind: "delivered"; body: unknown }
  | { kind: "rejected"; reason: string }
  | { kind: "unauthorized"; reason: string }
  | { kind: "retry"; reason: string; retryAfterMs?: number; serverError?: boolean };

/** A refusal in words for status, the log and dead letters: never the body's text (src/remote-answer.ts). */
const describe = (response: BeaconResponse): string => `beacon answered ${describeRemoteError(response)}`;

export function classify(response: BeaconResponse, answer: AnswerRule, records: number): Outcome {
  const { status } = response;
  if (status >= 200 && status < 300) {
    const problem = answerProblem(response, answer, records);
    if (problem === undefined) return { kind: "delivered", body: response.body };
    return { kind: "retry", reason: problem };
  }
  if (status === 400 || status === 413 || status === 422) return { kind: "rejected", reason: describe(response) };
  if (status === 401) return { kind: "unauthorized", reason: describe(response) };
  const serverError = status >= 500 && status !== 503 && response.retryAfterMs === undefined;
  return { kind: "retry", reason: describe(response), retryAfterMs: response.retryAfterMs, serverError };
}

export function classifyError(error: unknown): Outcome {
  if (error instanceof BeaconUnreachableError || error instanceof AnswerTooLargeError) return { kind: "retry", reason: error.message };
  throw error;
}

/** Thrown inside the retry loop for an outcome worth another attempt. */
export class RetryableDeliveryError extends Error {
  readonly retryAfterMs: number | undefined;
  constructor(reason: string, retryAfterMs?: number) {
    super(reason);
    this.retryAfterMs = retryAfterMs;
  }
}
