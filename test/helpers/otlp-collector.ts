import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

/** How the collector answers: takes it, or a failure a vendor's collector (or what stands before it) gives. */
export type CollectorMode = "ok" | "500" | "429" | "html";

export interface Arrival {
  path: string;
  headers: IncomingHttpHeaders;
  /** The request's OTLP JSON, gunzipped. */
  body: any;
  /** What came over the wire, as text. */
  raw: string;
}

/**
 * A vendor's OTLP/HTTP collector on loopback, where the beacon forwards to: records what it takes (2xx), answers as
 * `mode` says, and goes down (`down()`: connections refused) and up again on the same port.
 */
export class TestCollector {
  mode: CollectorMode = "ok";
  /** How long each answer takes (a remote collector's round trip). */
  delayMs = 0;
  /** Requests taken (answered 2xx in mode "ok"). */
  readonly arrivals: Arrival[] = [];
  /** Requests received and not yet answered (during delayMs). */
  inFlight = 0;
  /** Every request that came, whatever it was answered. */
  requests = 0;
  #server: Server | undefined;
  #port = 0;

  static async start(): Promise<TestCollector> {
    const collector = new TestCollector();
    await collector.up();
    return collector;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  async up(): Promise<void> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        this.inFlight++;
        setTimeout(answer, this.delayMs);
      });
      const answer = () => {
        this.inFlight--;
        this.requests++;
        if (this.mode === "500") return void response.writeHead(500, { "content-type": "application/json" }).end('{"code":13}');
        if (this.mode === "429") return void response.writeHead(429, { "retry-after": "1" }).end();
        if (this.mode === "html") {
          return void response.writeHead(200, { "content-type": "text/html" }).end("<!DOCTYPE html><html><body>Sign in</body></html>");
        }
        const wire = Buffer.concat(chunks);
        const raw = (request.headers["content-encoding"] === "gzip" ? gunzipSync(wire) : wire).toString("utf8");
        this.arrivals.push({ path: request.url ?? "", headers: request.headers, body: JSON.parse(raw), raw });
        response.writeHead(200, { "content-type": "application/json" }).end("{}");
      };
    });
    await new Promise<void>((resolve) => server.listen(this.#port, "127.0.0.1", resolve));
    this.#port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  /** Stops listening: the beacon's connections are refused until up(). */
  async down(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  /** Resource entries taken for `signal` whose `env` attribute is `marker`. */
  resources(signal: "metrics" | "traces" | "logs", marker: string): any[] {
    const field = { metrics: "resourceMetrics", traces: "resourceSpans", logs: "resourceLogs" }[signal];
    return this.arrivals
      .filter((a) => a.path === `/v1/${signal}`)
      .flatMap((a) => a.body[field] as any[])
      .filter((entry) => entry.resource.attributes.some((kv: any) => kv.key === "env" && kv.value.stringValue === marker));
  }
}
