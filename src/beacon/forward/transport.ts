import { promisify } from "node:util";
import { gzip as gzipCallback } from "node:zlib";
import type { Clock } from "../../clock.ts";
import { AnswerTooLargeError, MiB, readCappedText } from "../../http/capped-answer.ts";
import type { OtlpSignal } from "../../protocol/otlp.ts";
import { mediaType, parseAnswerText, type RemoteAnswer } from "../../remote-answer.ts";

const gzip = promisify(gzipCallback);

/** The most of a collector's answer read: an OTLP answer is a few bytes; a proxy's endless page costs at most this. */
const ANSWER_CAP = 1 * MiB;

/** What one POST came to: the collector's answer, or why none came (refused, DNS, TLS, timeout, an answer too large). */
export type SendResult =
  | { kind: "answer"; answer: RemoteAnswer; retryAfterMs: number | undefined }
  | { kind: "unreachable"; reason: string };

/** The transport of the forwarder: one OTLP/HTTP JSON POST, the answer read no further than a cap. */
export interface CollectorTransport {
  send(signal: OtlpSignal, body: unknown, signal_: AbortSignal): Promise<SendResult>;
}

/** A Retry-After header (seconds or an HTTP date) in ms from `nowMs`; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, nowMs: number): number | undefined {
  if (!value) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/**
 * POSTs to `${endpoint}/v1/{metrics,traces,logs}` as OTLP/HTTP says: JSON, gzip-compressed (every OTLP receiver takes
 * gzip), with the configured headers. Redirects are not followed (a redirect is not the collector's answer). The
 * headers' values are secrets: they are sent, never shown.
 */
export class OtlpHttpTransport implements CollectorTransport {
  readonly #endpoint: string;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #timeoutMs: number;
  readonly #now: Clock;

  constructor(options: { endpoint: string; headers: Readonly<Record<string, string>>; timeoutMs: number; now?: Clock }) {
    this.#endpoint = options.endpoint;
    this.#headers = options.headers;
    this.#timeoutMs = options.timeoutMs;
    this.#now = options.now ?? Date.now;
  }

  async send(signal: OtlpSignal, body: unknown, stop: AbortSignal): Promise<SendResult> {
    const url = `${this.#endpoint}/v1/${signal}`;
    const headers = new Headers(this.#headers);
    headers.set("content-type", "application/json");
    headers.set("content-encoding", "gzip");
    if (!headers.has("user-agent")) headers.set("user-agent", "egress-agent-beacon");
    try {
      const response = await fetch(url, {
        method: "POST",
        headers,
        body: await gzip(JSON.stringify(body)),
        redirect: "manual",
        signal: AbortSignal.any([stop, AbortSignal.timeout(this.#timeoutMs)]),
      });
      const text = await readCappedText(response, ANSWER_CAP, url);
      return {
        kind: "answer",
        answer: { status: response.status, body: parseAnswerText(text), contentType: mediaType(response) },
        retryAfterMs: parseRetryAfter(response.headers.get("retry-after"), this.#now()),
      };
    } catch (err) {
      if (stop.aborted) throw err; // stopping: the round ends and its batches stay queued
      if (err instanceof AnswerTooLargeError) return { kind: "unreachable", reason: err.message };
      return { kind: "unreachable", reason: unreachableReason(err) };
    }
  }
}

/** Why no answer came, in words that name no URL or header: the system error's code, or a timeout. */
function unreachableReason(err: unknown): string {
  if ((err as Error).name === "TimeoutError") return "no answer within telemetry.forward.retry.requestTimeout";
  const cause = (err as { cause?: { code?: unknown } }).cause;
  const code = typeof cause?.code === "string" && /^[A-Z0-9_]{1,40}$/.test(cause.code) ? cause.code : "network error";
  return `the collector could not be reached (${code})`;
}
