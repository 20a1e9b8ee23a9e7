import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { parse as parseQuery } from "node:querystring";
import type { Logger } from "pino";
import type { ListenAddress } from "../config/units.ts";
import { HttpError } from "../errors.ts";
import { readJsonBody, readRawBody, type BodyLimit, type BodyRules } from "./body.ts";
import { BodyBudgets, type BodyCharge } from "./budget.ts";
import { ConnectionGuard } from "./connections.ts";
import { errorAnswer, internalErrorAnswer } from "./error-handling.ts";
import { Answer, EventStream, type HttpRequest } from "./exchange.ts";
import { matchSegments } from "./path-match.ts";
import { connectionCap, defaultHttpLimits, type HttpLimits } from "./limits.ts";
import { defaultEventStreamLimits, type EventStreamLimits, writeEventStream } from "./sse-writer.ts";
import { lingerOnClose } from "./lingering-close.ts";

export type Handler = (request: HttpRequest) => unknown;

export interface RouteOptions {
  /**
   * How the body is read before the handler runs: none (the default for GET), JSON, raw bytes of these media types
   * (whose items, when not JSON, the handler's decoder charges as it makes them: HttpRequest.chargeItems), or `stream`:
   * not read, the handler gets the request's stream as `body` and bounds what it reads and holds itself (no budget).
   */
  body?: "none" | "json" | "stream" | { raw: readonly string[] };
  /** Served from the connection reserve (health, billing); a function decides per request, after `authorize`. */
  reserved?: boolean | ((request: HttpRequest) => boolean);
  /** The budget class (`limits.bodyBudgets`) its bodies are charged to, or chosen per request after `authorize`. */
  budget?: string | ((request: HttpRequest) => string | undefined);
  /** A smaller body limit, for bodies small by nature: the whole body must then come within bodyIdleTimeoutMs. */
  bodyLimit?: BodyLimit;
  /** Not in the request log when it succeeds: a health check probed every few seconds would drown the rest. */
  quiet?: boolean;
  /**
   * Runs before the body is read, from the headers alone (an anonymous large body is refused unread). True: the
   * request carries a valid credential, and its connection is never displaced by one that has shown none.
   */
  authorize?: (request: HttpRequest) => unknown;
  /** How this route words its errors (OTLP answers a google.rpc.Status); the server's `{detail, code}` otherwise. */
  errors?: (error: unknown, request: HttpRequest) => Answer | Promise<Answer>;
}

interface Route extends RouteOptions {
  path: string;
  handler: Handler;
}

/** A route whose path has `{name}` segments: matched segment by segment, after the fixed routes. */
interface PatternRoute extends Route {
  method: string;
  segments: string[];
}

/** What the server tells `onResponse` of every answered request. */
export interface Served {
  /** The route's path, or "unmatched". */
  route: string;
  method: string;
  status: number;
  startMs: number;
  durationMs: number;
}

const JSON_TYPE = "application/json; charset=utf-8";

/**
 * The HTTP server of every service (the sidecar's local API, the beacon's two listeners, the control plane, the agent
 * server): fixed routes and a few path patterns on node:http. Not a framework: Fastify (with ajv and its serializers)
 * held about 6 MiB of the sidecar's idle memory for routing we do with one Map (bench/RESULTS.md).
 */
export class HttpServer {
  readonly #routes = new Map<string, Route>();
  readonly #patterns: PatternRoute[] = [];
  readonly #server: Server;
  readonly #logger: Logger;
  readonly #bodyLimit: BodyLimit;
  readonly #limits: HttpLimits;
  readonly #limitsKey: string | undefined;
  readonly #budgets: BodyBudgets;
  readonly #connections: ConnectionGuard;
  readonly #logRequests: boolean;
  readonly #scheme: "http" | "https";
  readonly #eventStreams: EventStreamLimits;
  #closing = false;
  #nextId = 0;
  /** Runs before routing: may refuse any request by throwing an HttpError (the sidecar's 503 while stopping). */
  onRequest: ((method: string) => void) | undefined;
  onResponse: ((served: Served) => void) | undefined;

  constructor(options: {
    logger: Logger;
    bodyLimit: BodyLimit;
    /** Connections, timeouts and body budgets; `limitsKey` names their config block in messages ("http"). */
    limits?: HttpLimits;
    limitsKey?: string;
    tls?: { cert: string | Buffer; key: string | Buffer };
    logRequests?: boolean;
    /** Heartbeat and slow-reader limits of the Server-Sent Events answers. */
    eventStreams?: EventStreamLimits;
  }) {
    this.#logger = options.logger;
    this.#bodyLimit = options.bodyLimit;
    const limits = options.limits ?? defaultHttpLimits;
    this.#limits = limits;
    this.#limitsKey = options.limitsKey;
    this.#budgets = new BodyBudgets(limits, this.#limitsKey);
    this.#logRequests = options.logRequests ?? false;
    this.#scheme = options.tls ? "https" : "http";
    this.#eventStreams = options.eventStreams ?? defaultEventStreamLimits;
    const listener = (request: IncomingMessage, response: ServerResponse) => void this.#serve(request, response);
    const timeouts = {
      headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // How often Node looks for requests past those timeouts: often enough to keep them within a second or so.
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
    };
    this.#server = options.tls
      ? createHttpsServer(
          { cert: options.tls.cert, key: options.tls.key, handshakeTimeout: limits.headersTimeoutMs, ...timeouts },
          listener,
        )
      : createHttpServer(timeouts, listener);
    this.#connections = new ConnectionGuard(this.#server, {
      maxConnections: connectionCap(limits.maxConnections),
      reservedConnections: limits.reservedConnections,
      firstRequestMs: limits.headersTimeoutMs,
    });
  }

  readonly #key = (name: string): string | undefined => (this.#limitsKey ? `${this.#limitsKey}.${name}` : undefined);

  /** Connections open, refused at the cap and closed to make room; body bytes held now, in all and by budget. */
  get load(): { open: number; refused: number; evicted: number; bodyBytes: number; bodyBytesByBudget: Record<string, number> } {
    const bodyBytesByBudget = this.#budgets.held();
    return { ...this.#connections.stats, bodyBytes: Object.values(bodyBytesByBudget).reduce((a, b) => a + b, 0), bodyBytesByBudget };
  }

  get(path: string, handler: Handler, options: Pick<RouteOptions, "authorize" | "reserved" | "quiet"> = {}): void {
    this.#add("GET", { ...options, path, handler });
  }

  post(path: string, handler: Handler, options: RouteOptions = {}): void {
    this.#add("POST", { body: "json", ...options, path, handler });
  }

  patch(path: string, handler: Handler, options: RouteOptions = {}): void {
    this.#add("PATCH", { body: "json", ...options, path, handler });
  }

  delete(path: string, handler: Handler, options: Pick<RouteOptions, "authorize"> = {}): void {
    this.#add("DELETE", { ...options, path, handler });
  }

  #add(method: string, route: Route): void {
    if (typeof route.budget === "string") this.#budgets.get(route.budget); // an unknown class fails at registration
    if (route.path.includes("{")) this.#patterns.push({ ...route, method, segments: route.path.split("/") });
    else this.#routes.set(`${method} ${route.path}`, route);
  }

  #match(method: string, path: string): { route: Route; params: Record<string, string> } | undefined {
    const route = this.#routes.get(`${method} ${path}`);
    if (route) return { route, params: {} };
    for (const pattern of this.#patterns) {
      const params = pattern.method === method ? matchSegments(pattern.segments, path) : undefined;
      if (params) return { route: pattern, params };
    }
    return undefined;
  }

  /** Starts listening; returns the base URL actually bound (port 0 asks the OS for a free port). */
  async listen(address: ListenAddress): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(address.port, address.host, () => {
        this.#server.off("error", reject);
        resolve();
      });
    });
    const bound = this.#server.address();
    const port = typeof bound === "object" && bound ? bound.port : address.port;
    const host = address.host.includes(":") ? `[${address.host}]` : address.host;
    return `${this.#scheme}://${host}:${port}`;
  }

  /** Stops taking connections; requests in flight finish, later ones on open connections get 503. */
  async close(): Promise<void> {
    this.#closing = true;
    if (!this.#server.listening) return;
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeIdleConnections();
    this.#connections.closeIdle();
    await closed;
  }

  async #serve(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    const started = performance.now();
    const startMs = Date.now();
    const method = incoming.method ?? "GET";
    const url = incoming.url ?? "/";
    const queryAt = url.indexOf("?");
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    const matched = this.#match(method === "HEAD" ? "GET" : method, path);
    const route = matched?.route;
    const id = ++this.#nextId;
    const logger = this.#logger;
    let log: Logger | undefined;
    const request: { -readonly [K in keyof HttpRequest]: HttpRequest[K] } = {
      method,
      path,
      params: matched?.params ?? {},
      query: queryAt < 0 ? {} : parseQuery(url.slice(queryAt + 1)),
      headers: incoming.headers,
      remoteAddress: incoming.socket.remoteAddress,
      body: undefined,
      // A child logger per request only when one is used: most requests log nothing.
      get log() {
        log ??= logger.child({ reqId: id });
        return log;
      },
    };
    response.on("finish", () => {
      const durationMs = performance.now() - started;
      if (this.#logRequests && !(route?.quiet && response.statusCode < 400))
        this.#logger.info({ reqId: id, method, url: path, statusCode: response.statusCode, responseTime: durationMs }, "request completed");
      this.onResponse?.({ route: route?.path ?? "unmatched", method, status: response.statusCode, startMs, durationMs });
    });
    let answer: Answer | EventStream;
    let charge: BodyCharge | undefined;
    try {
      if (this.#closing) throw new HttpError("EGRESS_ERR_CLOSING", "the server is shutting down; send the request again in a moment");
      this.onRequest?.(method);
      if (!route) throw new HttpError("EGRESS_ERR_NOT_FOUND", `no route ${method} ${path}`);
      const { reserved } = route;
      if (typeof reserved !== "function") this.#refuseWhenCrowded(reserved);
      // Credentials from the headers alone, before any body: whether the route may use the reserve (when it decides
      // per request) and which budget its body is charged to can depend on who sent it.
      if ((await route.authorize?.(request)) === true) this.#connections.trust(incoming.socket);
      if (typeof reserved === "function") this.#refuseWhenCrowded(reserved(request));
      charge = this.#budgets.get(typeof route.budget === "function" ? route.budget(request) : route.budget).open();
      const items = { max: this.#limits.bodyItems, key: this.#key("bodyItems") };
      const timeout = { ms: this.#limits.bodyIdleTimeoutMs, key: this.#key("bodyIdleTimeout"), whole: route.bodyLimit !== undefined };
      const rules: BodyRules = { limit: route.bodyLimit ?? this.#bodyLimit, items, charge, timeout };
      if (route.body === "json") request.body = await readJsonBody(incoming, rules);
      else if (route.body === "stream") request.body = incoming;
      else if (typeof route.body === "object") Object.assign(request, await readRawBody(incoming, rules, route.body.raw));
      const result = await route.handler(request);
      answer = result instanceof Answer || result instanceof EventStream ? result : new Answer(200, result);
    } catch (err) {
      try {
        answer = route?.errors ? await route.errors(err, request) : errorAnswer(err, request);
      } catch (renderErr) {
        request.log.error({ err: renderErr }, "request failed");
        answer = internalErrorAnswer();
      }
    } finally {
      // The body and what was parsed from it are the handler's no longer: their memory goes back to the budget.
      charge?.release();
    }
    if (response.destroyed || response.headersSent) return; // the client is gone (a body cut short)
    if (answer instanceof EventStream) return writeEventStream(answer, response, request.log, this.#eventStreams);
    try {
      if (!incoming.complete) lingerOnClose(response, incoming);
      this.#send(answer, response, !this.#closing && incoming.complete);
    } catch (err) {
      // An answer that cannot be written (a BigInt in the body, a bad header value) is our bug: a logged 500.
      request.log.error({ err }, "request failed");
      if (response.headersSent) return void response.destroy();
      for (const name of response.getHeaderNames()) response.removeHeader(name);
      this.#send(internalErrorAnswer(), response, false);
    }
  }

  /** Only the reserve is left: routes that must answer are served, others get 503. */
  #refuseWhenCrowded(reserved: boolean | undefined): void {
    if (!reserved && this.#connections.crowded()) {
      throw new HttpError("EGRESS_ERR_BUSY", "too many connections are open; send the request again shortly", { "retry-after": "1" });
    }
  }

  #send(answer: Answer, response: ServerResponse, keepAlive: boolean): void {
    // Once closing, every answer ends its connection, so that close() is not held up by an idle keep-alive; so does
    // an answer given before the body was read (a refused credential, a 413): the rest is never waited for.
    if (!keepAlive) response.setHeader("connection", "close");
    for (const [name, value] of Object.entries(answer.headers ?? {})) response.setHeader(name, value);
    if (answer.status === 204 || answer.status === 304) {
      response.statusCode = answer.status;
      response.end();
      return;
    }
    // Bytes, or text of a stated type, go out as they are; anything else as JSON.
    const raw = answer.body instanceof Uint8Array || (typeof answer.body === "string" && answer.type !== undefined);
    const payload = raw ? (answer.body as Uint8Array | string) : JSON.stringify(answer.body);
    response.statusCode = answer.status;
    response.setHeader("content-type", answer.type ?? JSON_TYPE);
    response.setHeader("content-length", Buffer.byteLength(payload));
    response.end(payload);
  }
}
