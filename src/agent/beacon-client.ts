import { getCACertificates } from "node:tls";
import { EnvHttpProxyAgent, request, type Dispatcher } from "undici";
import { redactUrl } from "../config/redact.ts";
import { EgressError } from "../errors.ts";

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

/** One request sent to the beacon, as its listeners (audit log, metrics, own telemetry) hear of it. */
export interface SentRequest {
  /** `license` for verification, else the stream the request carries. */
  stream: string;
  url: string;
  path: string;
  records: number;
  /** The body exactly as sent; it may hold the license key. */
  body: string;
  /** HTTP status, or null when no answer came. */
  status: number | null;
  error: string | null;
  startMs: number;
  durationMs: number;
}

/** Forward proxies for beacon traffic (config `proxy.*`, normally from HTTPS_PROXY / HTTP_PROXY / NO_PROXY). */
export interface ProxySettings {
  https: string;
  http: string;
  noProxy: string;
}

/**
 * The only way out of the sidecar: JSON POSTs to the beacon, each told to the listeners (audit log). Proxies come
 * from the parsed config, never read from env here (undici's EnvHttpProxyAgent does the routing and
 * NO_PROXY matching). Never constructed in offline mode.
 */
export class BeaconClient {
  readonly #baseUrl: string;
  readonly #timeoutMs: number;
  readonly #dispatcher: Dispatcher;
  readonly #now: () => number;
  /** Told of every request's outcome and duration: the audit log, /metrics, the sidecar's own telemetry. */
  readonly listeners: ((request: SentRequest) => void)[] = [];

  constructor(options: {
    baseUrl: string;
    timeoutMs: number;
    proxy?: ProxySettings;
    /** PEM certificates trusted beside the default ones (which include NODE_EXTRA_CA_CERTS). */
    extraCa?: string;
    now?: () => number;
  }) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#timeoutMs = options.timeoutMs;
    this.#now = options.now ?? Date.now;
    const tls = options.extraCa ? { ca: [...getCACertificates("default"), options.extraCa] } : {};
    const proxy = options.proxy ?? { https: "", http: "", noProxy: "" };
    this.#dispatcher = new EnvHttpProxyAgent({
      // "" (not undefined) so that undici does not fall back to reading the environment itself.
      httpsProxy: proxy.https,
      httpProxy: proxy.http,
      noProxy: proxy.noProxy,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connect: tls,
      requestTls: tls,
      proxyTls: tls,
    });
  }

  /** `audit`: which stream the request carries and how many records, for the audit log. */
  async post(
    path: string,
    /** The JSON body, serialised by the caller (the outbox already holds records as JSON text). */
    payload: string,
    options: { token?: string; signal?: AbortSignal; audit: { stream: string; records: number } },
  ): Promise<BeaconResponse> {
    const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "egress-agent" };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const signals = [AbortSignal.timeout(this.#timeoutMs), ...(options.signal ? [options.signal] : [])];
    const url = `${this.#baseUrl}${path}`;
    // When, on the sidecar's clock (the audit log and its retention use it); how long, on a real one.
    const startMs = this.#now();
    const started = performance.now();
    const observe = (status: number | null, error: string | null) => {
      const sent: SentRequest = { ...options.audit, url, path, body: payload, status, error, startMs, durationMs: performance.now() - started };
      for (const listener of this.listeners) listener(sent);
    };
    try {
      const response = await request(url, {
        method: "POST",
        headers,
        body: payload,
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
      observe(response.statusCode, null);
      return { status: response.statusCode, body: parsed, retryAfterMs: parseRetryAfter(response.headers["retry-after"], this.#now()) };
    } catch (err) {
      const cause = (err as { code?: string; cause?: { code?: string } }).code ?? (err as { name?: string }).name;
      observe(null, options.signal?.aborted ? "cut short: stopping" : String(cause));
      if (options.signal?.aborted) throw err;
      throw new BeaconUnreachableError(`beacon unreachable at ${redactUrl(this.#baseUrl)}: ${cause}`);
    }
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }
}
