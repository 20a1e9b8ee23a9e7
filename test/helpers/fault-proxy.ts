import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Clock } from "../../src/clock.ts";
import { NOWHERE } from "./processes.ts";

/**
 * Faults that need the beacon's own answer or the connection itself:
 * - `reset-mid-response`: forwarded (the beacon stores the batch); the sidecar gets the status line, the headers
 *   and half the body, then a TCP reset;
 * - `drop-after-200`: forwarded (the beacon stores the batch); the sidecar gets `200` and the headers, then the
 *   connection closes before the body;
 * - `hang`: held, never answered: the sidecar's request timeout or its shutdown ends it. `forwardHeld` may still
 *   pass it on to the beacon later (the request was on the wire, after all).
 */
export type Fault = "reset-mid-response" | "drop-after-200" | "hang";

/** What the proxy does with one request: pass it to the beacon (after a delay), answer it itself, or inject a fault. */
export type FaultAction =
  | { pass: true; delayMs?: number }
  | { status: number; headers?: Record<string, string>; body?: unknown }
  | { fault: Fault };

export interface SeenRequest {
  path: string;
  /** When the request had fully arrived, on the proxy's clock. */
  at: number;
  /** The parsed JSON body (undefined with `keepBodies: false`). */
  body: any;
  /** How many trace transactions the body carried. */
  records: number;
  /** The request's headers, as the sidecar sent them. */
  headers: IncomingHttpHeaders;
  /** The status line the sidecar was sent; 0 when none was. */
  answered: number;
  fault?: Fault;
  /** The beacon's answer when the request was forwarded, whether or not the sidecar ever saw it. */
  upstream?: { status: number; body: any };
  /** When the sidecar closed the connection before a complete answer (its timeout, its shutdown, kill -9). */
  abandonedAt?: number;
}

interface HeldRequest {
  entry: SeenRequest;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  res: ServerResponse;
}

const HOP_BY_HOP = ["connection", "keep-alive", "transfer-encoding", "content-length", "host"];

function parseJson(buffer: Buffer): unknown {
  try {
    return JSON.parse(buffer.toString());
  } catch {
    return undefined;
  }
}

/**
 * Test code: an HTTP proxy on 127.0.0.1 between the sidecar and the beacon. `decide` picks, per request,
 * whether to forward it, answer with a status of its own (500, 429 with Retry-After, ...) or inject a `Fault`;
 * `refuseConnections` drops new connections at connect. Every request is recorded in `seen`, with the beacon's
 * answer when it was forwarded.
 */
export class FaultProxy {
  readonly seen: SeenRequest[] = [];
  /** When each refused connection came, on the proxy's clock. */
  readonly refused: number[] = [];
  decide: (path: string, body: any, index: number) => FaultAction = () => ({ pass: true });
  #server: Server;
  #target: string;
  readonly #now: Clock;
  readonly #keepBodies: boolean;
  readonly #upstreamAgent = new Agent({ keepAlive: true });
  readonly #held: HeldRequest[] = [];
  #refuseLeft = 0;

  private constructor(target: string, options: { now?: Clock; keepBodies?: boolean }) {
    this.#target = target;
    this.#now = options.now ?? Date.now;
    this.#keepBodies = options.keepBodies ?? true;
    this.#server = createServer((req, res) => void this.#handle(req, res));
    this.#server.on("connection", (socket: Socket) => {
      if (this.#refuseLeft > 0) this.#refuse(socket);
    });
  }

  /** `now`: the clock of `at` and `refused` (a test's injected clock); `keepBodies: false` for bulk runs. */
  static async start(target: string, options: { now?: Clock; keepBodies?: boolean } = {}): Promise<FaultProxy> {
    const proxy = new FaultProxy(target, options);
    await new Promise<void>((resolve) => proxy.#server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  /**
   * The address of a beacon that is not up yet, for a sidecar given it before the beacon starts: every connection is
   * refused until `forwardTo(beaconUrl)`. The proxy keeps the port bound throughout; a port found free and bound
   * again later could be taken by another process meanwhile.
   */
  static async refusing(options: { now?: Clock; keepBodies?: boolean } = {}): Promise<FaultProxy> {
    const proxy = await FaultProxy.start(NOWHERE, options);
    proxy.refuseConnections();
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** From now on, passes requests on to `target` and refuses no connection. */
  forwardTo(target: string): void {
    this.#target = target;
    this.acceptConnections();
  }

  /**
   * Refuses the next `count` connections (all of them by default) the moment they connect, with a TCP reset and
   * not a byte of HTTP. Idle keep-alive connections are closed first, so no request slips through on one.
   */
  refuseConnections(count = Infinity): void {
    this.#refuseLeft = count;
    this.#server.closeIdleConnections();
  }

  acceptConnections(): void {
    this.#refuseLeft = 0;
  }

  #refuse(socket: Socket): void {
    this.#refuseLeft--;
    this.refused.push(this.#now());
    socket.resetAndDestroy();
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A request on a connection opened before the refusal began is refused too.
    if (this.#refuseLeft > 0) return this.#refuse(req.socket);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const body = parseJson(raw) as { trace_transactions?: unknown[] } | undefined;
    const path = req.url ?? "/";
    const entry: SeenRequest = {
      path,
      at: this.#now(),
      body: this.#keepBodies ? body : undefined,
      records: Array.isArray(body?.trace_transactions) ? body.trace_transactions.length : 0,
      headers: req.headers,
      answered: 0,
    };
    this.seen.push(entry);
    res.on("close", () => {
      if (!res.writableFinished) entry.abandonedAt ??= this.#now();
    });
    const action = this.decide(path, body, this.seen.filter((s) => s.path === path).length - 1);
    if ("status" in action) {
      entry.answered = action.status;
      res.writeHead(action.status, { "content-type": "application/json", ...action.headers });
      res.end(JSON.stringify(action.body ?? { detail: "injected fault", code: "TEST_FAULT" }));
      return;
    }
    if ("fault" in action) entry.fault = action.fault;
    if ("fault" in action && action.fault === "hang") {
      this.#held.push({ entry, headers: req.headers, raw, res });
      return;
    }
    if ("pass" in action && action.delayMs) await new Promise((resolve) => setTimeout(resolve, action.delayMs));
    const upstream = await this.#forward(entry, req.headers, raw);
    if (!upstream) {
      if (!res.destroyed) {
        entry.answered = 502;
        res.writeHead(502).end();
      }
      return;
    }
    const socket = res.socket;
    if (!socket || socket.destroyed) return; // the sidecar is gone (killed, timed out): the beacon has it anyway
    const fault = "fault" in action ? action.fault : undefined;
    if (fault === "reset-mid-response" || fault === "drop-after-200") {
      // Written to the socket by hand: the status line and headers promise a body that never (fully) comes.
      const status = fault === "drop-after-200" ? 200 : upstream.status;
      entry.answered = status;
      const head = `HTTP/1.1 ${status} OK\r\ncontent-type: application/json\r\ncontent-length: ${upstream.raw.length}\r\n\r\n`;
      const part = fault === "reset-mid-response" ? upstream.raw.subarray(0, Math.floor(upstream.raw.length / 2)) : Buffer.alloc(0);
      socket.write(Buffer.concat([Buffer.from(head), part]), () =>
        fault === "reset-mid-response" ? socket.resetAndDestroy() : socket.destroy(),
      );
      return;
    }
    entry.answered = upstream.status;
    res.writeHead(upstream.status, upstream.headers).end(upstream.raw);
  }

  /** Sends the request on to the beacon and records its answer in `entry.upstream`; undefined when unreachable. */
  #forward(
    entry: SeenRequest,
    headers: IncomingHttpHeaders,
    raw: Buffer,
  ): Promise<{ status: number; headers: IncomingHttpHeaders; raw: Buffer } | undefined> {
    const outgoing = Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.includes(name)));
    return new Promise((resolve) => {
      const upstream = httpRequest(
        `${this.#target}${entry.path}`,
        { method: "POST", headers: { ...outgoing, "content-length": raw.length }, agent: this.#upstreamAgent },
        (up) => {
          const chunks: Buffer[] = [];
          up.on("data", (chunk: Buffer) => chunks.push(chunk));
          up.on("error", () => resolve(undefined));
          up.on("end", () => {
            const body = Buffer.concat(chunks);
            entry.upstream = { status: up.statusCode ?? 0, body: parseJson(body) };
            const kept = Object.fromEntries(Object.entries(up.headers).filter(([name]) => !HOP_BY_HOP.includes(name)));
            resolve({ status: up.statusCode ?? 502, headers: kept, raw: body });
          });
        },
      );
      upstream.on("error", () => resolve(undefined));
      upstream.end(raw);
    });
  }

  /**
   * Passes every held (`hang`) request on to the beacon now, as a request that was on the wire would still arrive;
   * a sidecar still waiting gets the answer. Returns their records, each with the beacon's `upstream` answer.
   */
  async forwardHeld(): Promise<SeenRequest[]> {
    const held = this.#held.splice(0);
    for (const { entry, headers, raw, res } of held) {
      const upstream = await this.#forward(entry, headers, raw);
      if (upstream && !res.destroyed) {
        entry.answered = upstream.status;
        res.writeHead(upstream.status, upstream.headers).end(upstream.raw);
      }
    }
    return held.map((h) => h.entry);
  }

  /** Forgets every held request, as one lost on the way: the beacon never sees it. */
  discardHeld(): SeenRequest[] {
    const held = this.#held.splice(0);
    for (const h of held) h.res.destroy();
    return held.map((h) => h.entry);
  }

  /** Held requests the sidecar is still waiting on. */
  get holding(): SeenRequest[] {
    return this.#held.filter((h) => !h.res.destroyed).map((h) => h.entry);
  }

  requests(path: string): SeenRequest[] {
    return this.seen.filter((s) => s.path === path);
  }

  /** Sum of the beacon's `inserted_count` over every forwarded request of `path` it answered 2xx, seen or not by the sidecar. */
  insertedCount(path = "/v1/beacon/ingest-traces"): number {
    return this.requests(path).reduce(
      (sum, r) => sum + (r.upstream && r.upstream.status < 300 ? Number(r.upstream.body?.inserted_count ?? 0) : 0),
      0,
    );
  }

  close(): Promise<void> {
    this.#refuseLeft = 0;
    for (const h of this.#held.splice(0)) h.res.destroy();
    this.#server.closeAllConnections();
    this.#upstreamAgent.destroy();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}
