import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { getCACertificates } from "node:tls";
import type { Clock } from "../../clock.ts";
import { redactUrl } from "../../config/redact.ts";
import { EgressError } from "../../errors.ts";
import { AnswerTooLargeError, MiB, readCappedIncoming } from "../../http/capped-answer.ts";
import { mediaType } from "../../http/body.ts";
import { INSTANCE_ID_HEADER, userAgent } from "../../protocol/instance.ts";
import { parseAnswerText } from "../../remote-answer.ts";
import { EGRESS_VERSION } from "../../version.ts";
import { proxyFor, type ProxySettings } from "./proxy.ts";

export interface BeaconResponse {
  status: number;
  /** The parsed JSON answer, or its text when it is not JSON. */
  body: unknown;
  /** The answer's media type, lower case, without parameters ("" when none was sent). */
  contentType?: string;
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
 * The most of one beacon answer the sidecar reads. The documented answers are tiny (a JWT, `{inserted_count}`,
 * an OTLP partialSuccess); the largest the beacon sends is a 422 listing its at most 100 problems (~20 KiB). A
 * 1 MiB cap keeps a 422 a 422 (the batch is split, not retried whole) while a proxy's or portal's endless page
 * costs at most this much memory per request.
 */
const BEACON_ANSWER_CAP = 1 * MiB;

/** One request sent to the beacon, as its listeners (audit log, metrics, own telemetry) hear of it. */
export interface SentRequest {
  /** `license` for verification, else the stream the request carries. */
  stream: string;
  url: string;
  path: string;
  records: number;
  /** The body exactly as sent; it may hold the license key. */
  body: string | Buffer;
  /** HTTP status, or null when no answer came. */
  status: number | null;
  error: string | null;
  startMs: number;
  durationMs: number;
}

/**
 * The only way out of the sidecar: JSON POSTs to the beacon, each told to the listeners (audit log). Node's own
 * http(s) agent, with its built-in proxy support (CONNECT for https, NO_PROXY matching), rather than undici: the
 * beacon traffic is a few requests a second, and undici's ~0.8 MB of code cost idle memory (bench/RESULTS.md).
 * Proxies come from the parsed config, never read from env here. Never constructed in offline mode.
 */
export class BeaconClient {
  readonly #baseUrl: string;
  readonly #timeoutMs: number;
  readonly #agent: HttpAgent;
  readonly #request: typeof httpRequest;
  readonly #now: Clock;
  readonly #maxAnswerBytes: number;
  /** Who is asking, on every request: the instance id and `egress-agent/<version> (online)`. */
  readonly #identity: Record<string, string>;
  /** Told of every request's outcome and duration: the audit log, /metrics, the sidecar's own telemetry. */
  readonly listeners: ((request: SentRequest) => void)[] = [];

  constructor(options: {
    baseUrl: string;
    timeoutMs: number;
    proxy?: ProxySettings;
    /** PEM certificates trusted beside the default ones (which include NODE_EXTRA_CA_CERTS). */
    extraCa?: string;
    now?: Clock;
    /** The most of one answer read (default BEACON_ANSWER_CAP). */
    maxAnswerBytes?: number;
    /** The data dir's instance id (storage/instance-id.ts). */
    instanceId: string;
  }) {
    this.#identity = { [INSTANCE_ID_HEADER]: options.instanceId, "user-agent": userAgent(EGRESS_VERSION, "online") };
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#timeoutMs = options.timeoutMs;
    this.#now = options.now ?? Date.now;
    this.#maxAnswerBytes = options.maxAnswerBytes ?? BEACON_ANSWER_CAP;
    const proxy = options.proxy ?? { https: "", http: "", noProxy: "" };
    // Decided once, here, by the function `preview --destinations` uses; an explicit object, so that Node never
    // falls back to the process environment (NODE_USE_ENV_PROXY).
    const via = proxyFor(this.#baseUrl, proxy);
    const proxyEnv = { HTTPS_PROXY: via, HTTP_PROXY: via, NO_PROXY: "" };
    if (new URL(this.#baseUrl).protocol === "https:") {
      const ca = options.extraCa ? [...getCACertificates("default"), options.extraCa] : undefined;
      this.#agent = new HttpsAgent({ keepAlive: true, proxyEnv, ...(ca ? { ca } : {}) });
      this.#request = httpsRequest;
    } else {
      this.#agent = new HttpAgent({ keepAlive: true, proxyEnv });
      this.#request = httpRequest;
    }
  }

  /** `audit`: which stream the request carries and how many records, for the audit log. */
  async post(
    path: string,
    /** The JSON body, serialised by the caller (the outbox already holds records as JSON). */
    payload: string | Buffer,
    options: { token?: string; signal?: AbortSignal; audit: { stream: string; records: number } },
  ): Promise<BeaconResponse> {
    const headers: Record<string, string> = { "content-type": "application/json", ...this.#identity };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const signals = [AbortSignal.timeout(this.#timeoutMs), ...(options.signal ? [options.signal] : [])];
    const url = `${this.#baseUrl}${path}`;
    // When, on the sidecar's clock (the audit log and its retention use it); how long, on a real one.
    const startMs = this.#now();
    const started = performance.now();
    const observe = (status: number | null, error: string | null) => {
      const sent: SentRequest = {
        ...options.audit,
        url,
        path,
        body: payload,
        status,
        error,
        startMs,
        durationMs: performance.now() - started,
      };
      for (const listener of this.listeners) listener(sent);
    };
    let status: number | null = null;
    try {
      const response = await this.#send(url, headers, payload, AbortSignal.any(signals));
      status = response.statusCode ?? 0;
      const body = await readCappedIncoming(response, this.#maxAnswerBytes, url);
      observe(status, null);
      // Not JSON: the text, for the error message (src/remote-answer.ts keeps only what is safe of it).
      return {
        status,
        body: parseAnswerText(body),
        contentType: mediaType(response.headers),
        retryAfterMs: parseRetryAfter(response.headers["retry-after"], this.#now()),
      };
    } catch (err) {
      // An answer past the cap is no answer: a failed attempt, retried as one (never a success).
      if (err instanceof AnswerTooLargeError) {
        observe(status, err.message);
        throw err;
      }
      const timedOut = signals[0]!.aborted && !options.signal?.aborted;
      const cause = timedOut ? `no answer within ${this.#timeoutMs} ms` : ((err as { code?: string }).code ?? (err as Error).name);
      observe(null, options.signal?.aborted ? "cut short: stopping" : String(cause));
      if (options.signal?.aborted) throw err;
      throw new BeaconUnreachableError(`beacon unreachable at ${redactUrl(this.#baseUrl)}: ${cause}`);
    }
  }

  /** Resolves with the response once its head has arrived; `signal` also cuts the body short. */
  #send(url: string, headers: Record<string, string>, payload: string | Buffer, signal: AbortSignal): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const request = this.#request(
        url,
        { method: "POST", headers: { ...headers, "content-length": Buffer.byteLength(payload) }, agent: this.#agent, signal },
        resolve,
      );
      request.on("error", reject);
      request.end(payload);
    });
  }

  async close(): Promise<void> {
    this.#agent.destroy();
  }
}

/** What the license check and the shippers need of the client: a POST. Their unit tests hand them a fake. */
export type BeaconTransport = Pick<BeaconClient, "post">;
