import { BeaconUnreachableError, type BeaconResponse } from "../beacon-client.ts";

/**
 * What a send's result means for the records in it:
 * - delivered: ack them;
 * - rejected: the beacon refuses the content (400, 413, 422): split the batch to find the bad record;
 * - unauthorized: the token is bad (401): verify the license again, then retry;
 * - retry: anything else (unreachable, 403 license refused, 404 wrong URL, 408, 429, 5xx): not the records'
 *   fault, so back off and send them again.
 */
export type Outcome =
  | { kind: "delivered"; body: unknown }
  | { kind: "rejected"; reason: string }
  | { kind: "unauthorized"; reason: string }
  | { kind: "retry"; reason: string; retryAfterMs?: number };

function describe(response: BeaconResponse): string {
  const body = response.body as { detail?: unknown; code?: unknown } | undefined;
  const detail = typeof body?.detail === "string" ? body.detail : JSON.stringify(body?.detail ?? body ?? "").slice(0, 300);
  return `beacon answered ${response.status}${body?.code ? ` ${String(body.code)}` : ""}: ${detail}`;
}

export function classify(response: BeaconResponse): Outcome {
  const { status } = response;
  if (status >= 200 && status < 300) return { kind: "delivered", body: response.body };
  if (status === 400 || status === 413 || status === 422) return { kind: "rejected", reason: describe(response) };
  if (status === 401) return { kind: "unauthorized", reason: describe(response) };
  return { kind: "retry", reason: describe(response), retryAfterMs: response.retryAfterMs };
}

export function classifyError(error: unknown): Outcome {
  if (error instanceof BeaconUnreachableError) return { kind: "retry", reason: error.message };
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
