import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A load balancer for the tests, as a Kubernetes Service or an ingress stands before replicas: each request goes to
 * the next upstream in turn. An upstream that refuses the connection is skipped for the next (the request never
 * reached it); one that fails after taking the request answers 502, as a real balancer would.
 */
export class RoundRobinProxy {
  readonly #server: Server;
  readonly #upstreams: string[];
  #next = 0;
  /** Requests each upstream answered, by its URL. */
  readonly served = new Map<string, number>();

  private constructor(server: Server, upstreams: string[]) {
    this.#server = server;
    this.#upstreams = upstreams;
  }

  static async start(upstreams: string[]): Promise<RoundRobinProxy> {
    let proxy: RoundRobinProxy | undefined;
    const server = createServer((req, res) => void proxy!.#forward(req, res));
    proxy = new RoundRobinProxy(server, [...upstreams]);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async #forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    for (let tried = 0; tried < this.#upstreams.length; tried++) {
      const upstream = this.#upstreams[this.#next++ % this.#upstreams.length]!;
      const outcome = await this.#send(upstream, req, body, res);
      if (outcome !== "refused") {
        if (outcome === "answered") this.served.set(upstream, (this.served.get(upstream) ?? 0) + 1);
        return;
      }
    }
    res.writeHead(503, { "content-type": "application/json" }).end('{"detail":"no upstream reachable"}');
  }

  #send(upstream: string, req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<"answered" | "refused" | "failed"> {
    return new Promise((resolve) => {
      const target = new URL(req.url ?? "/", upstream);
      const out = request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on("end", () => resolve("answered"));
        answer.on("error", () => {
          res.destroy();
          resolve("failed");
        });
      });
      out.on("error", (err: NodeJS.ErrnoException) => {
        if (err.code === "ECONNREFUSED") return resolve("refused");
        if (!res.headersSent) res.writeHead(502, { "content-type": "application/json" }).end('{"detail":"upstream failed"}');
        else res.destroy();
        resolve("failed");
      });
      out.end(body);
    });
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}
