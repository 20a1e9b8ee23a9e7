import { describeRemoteError, isHtmlAnswer } from "../../remote-answer.ts";
import type { SendResult } from "./transport.ts";

/**
 * What a request's result means for its batches:
 * - delivered: a 2xx that is not an HTML page (a proxy's or a login page is never a delivery): done;
 * - refused: 400, 413 or 422, the collector refusing this content: retrying it would fail alike and hold up every
 *   batch behind it, so its batches are tried alone and one refused alone is dropped (logged, counted), once this
 *   collector has taken a request since the forwarder started or after a day: one that refuses everything is
 *   misconfigured, not fed a poison batch (forwarder.ts);
 * - retry: anything else, kept and sent again after a backoff: unreachable, 408, 429, 5xx, and also 401, 403, 404
 *   and 415, which say the endpoint or its headers are wrong (fixing them drains the backlog; nothing was lost).
 */
export type ForwardOutcome =
  | { kind: "delivered"; rejectedItems: number }
  | { kind: "refused"; reason: string }
  | { kind: "retry"; reason: string; retryAfterMs: number | undefined; label: string };

const REFUSED = new Set([400, 413, 422]);

export function classifyResult(result: SendResult): ForwardOutcome {
  if (result.kind === "unreachable") return { kind: "retry", reason: result.reason, retryAfterMs: undefined, label: "unreachable" };
  const { answer, retryAfterMs } = result;
  const { status } = answer;
  const why = `the collector answered ${describeRemoteError(answer)}`;
  if (status >= 200 && status < 300) {
    if (isHtmlAnswer(answer)) return { kind: "retry", reason: why, retryAfterMs, label: "html" };
    return { kind: "delivered", rejectedItems: rejectedItems(answer.body) };
  }
  if (REFUSED.has(status)) return { kind: "refused", reason: why };
  return { kind: "retry", reason: why, retryAfterMs, label: `${Math.floor(status / 100)}xx` };
}

/** The count an OTLP partialSuccess names (the collector took the rest; OTLP says not to retry it). */
function rejectedItems(body: unknown): number {
  const partial = (body as { partialSuccess?: Record<string, unknown> } | undefined)?.partialSuccess;
  if (!partial || typeof partial !== "object") return 0;
  const count = Number(partial.rejectedDataPoints ?? partial.rejectedSpans ?? partial.rejectedLogRecords ?? 0);
  return Number.isSafeInteger(count) && count > 0 ? count : 0;
}
