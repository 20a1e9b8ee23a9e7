import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What the proxy does with one request: pass it to the beacon, or answer it itself. */
export type FaultAction = { pass: true; delayMs?: number } | { status: number; headers?: Record<string, string>; body?: unknown };

export interface SeenRequest {
  path: string;
  at: number;
  body: any;
  answered: number;
}

/**
 * Test code: an HTTP proxy on 127.0.0.1 between the sidecar and the beacon. `decide` picks, per request,
 * whether to forward it or answer with a fault; every request is recorded.
 */
export class FaultProxy {
  readonly seen: SeenRequest[] = [];
  #server: Server;
  #target: string;
  decide: (path: string, body: any, index: number) => FaultAction = () => ({ pass: true });

  private constructor(server: Server, target: string) {
    this.#server = server;
    this.#target = target;
  }

  static async start(target: string): Promise<FaultProxy> {
    const proxy: FaultProxy = new FaultProxy(createServer((req, res) => void proxy.#handle(req, res)), target);
    await new Promise<void>((resolve) => proxy.#server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  set target(url: string) {
    this.#target = url;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    let body: unknown;
    try {
      body = JSON.parse(raw.toString());
    } catch {
      body = undefined;
    }
    const path = req.url ?? "/";
    const entry: SeenRequest = { path, at: Date.now(), body, answered: 0 };
    this.seen.push(entry);
    const action = this.decide(path, body, this.seen.filter((s) => s.path === path).length - 1);
    if (!("pass" in action)) {
      entry.answered = action.status;
      res.writeHead(action.status, { "content-type": "application/json", ...action.headers });
      res.end(JSON.stringify(action.body ?? { detail: "injected fault", code: "TEST_FAULT" }));
      return;
    }
    if (action.delayMs) await new Promise((resolve) => setTimeout(resolve, action.delayMs));
    const upstream = httpRequest(`${this.#target}${path}`, { method: req.method, headers: req.headers }, (up) => {
      entry.answered = up.statusCode ?? 0;
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on("error", () => {
      entry.answered = 502;
      res.writeHead(502).end();
    });
    upstream.end(raw);
  }

  requests(path: string): SeenRequest[] {
    return this.seen.filter((s) => s.path === path);
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}
