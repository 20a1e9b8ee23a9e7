import { EnvHttpProxyAgent, request, type Dispatcher } from "undici";
import { EgressError } from "../errors.ts";
import type { RequestObservation } from "./self-telemetry.ts";

export interface BeaconResponse {
  status: number;
  body: unknown;
  /** From a Retry-After header (seconds or HTTP date), when the beacon sent one. */
  retryAfterMs?: number;
}

/** The beacon could not be reached or did not answer in time: always worth retrying. */
export class BeaconUnreachableError extends EgressError {
  constructor(message: string) {
    super("EGRESS_ERR_BEACON_UNREACHABLE", message);
  }
}

export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The only way out of the sidecar: JSON POSTs to the beacon. HTTPS_PROXY, HTTP_PROXY and NO_PROXY are
 * honoured (undici's EnvHttpProxyAgent). Never constructed in offline mode.
 */
export class BeaconClient {
  readonly #baseUrl: string;
  readonly #timeoutMs: number;
  readonly #dispatcher: Dispatcher;
  readonly #now: () => number;
  /** Told of every request's outcome and duration (the sidecar's own telemetry). */
  observer: ((request: RequestObservation) => void) | undefined;

  constructor(options: { baseUrl: string; timeoutMs: number; now?: () => number }) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#timeoutMs = options.timeoutMs;
    this.#now = options.now ?? Date.now;
    this.#dispatcher = new EnvHttpProxyAgent({ headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs });
  }

  async post(path: string, body: unknown, options: { token?: string; signal?: AbortSignal } = {}): Promise<BeaconResponse> {
    const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "egress-agent" };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const signals = [AbortSignal.timeout(this.#timeoutMs), ...(options.signal ? [options.signal] : [])];
    const startMs = Date.now();
    const observe = (status: number | null) =>
      this.observer?.({ endpoint: path, method: "POST", serviceName: "beacon", status, startMs, durationMs: Date.now() - startMs });
    try {
      const response = await request(`${this.#baseUrl}${path}`, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        dispatcher: this.#dispatcher,
        signal: AbortSignal.any(signals),
      });
      const text = await response.body.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // not JSON: keep the text for the error message
      }
      observe(response.statusCode);
      return { status: response.statusCode, body: parsed, retryAfterMs: parseRetryAfter(response.headers["retry-after"], this.#now()) };
    } catch (err) {
      observe(null);
      if (options.signal?.aborted) throw err;
      const cause = (err as { code?: string; cause?: { code?: string } }).code ?? (err as { name?: string }).name;
      throw new BeaconUnreachableError(`beacon unreachable at ${this.#baseUrl}: ${cause}`);
    }
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }
}
