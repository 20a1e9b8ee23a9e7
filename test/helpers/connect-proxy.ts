import { createServer, type Server } from "node:http";
import { connect, type Socket } from "node:net";

/** A forward proxy as a corporate network has one: HTTP CONNECT tunnels only, optionally behind Basic auth. */
export class ConnectProxy {
  /** `host:port` of every tunnel asked for, and the Proxy-Authorization it came with. */
  readonly tunnels: { target: string; authorization: string | undefined }[] = [];
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  url = "";

  constructor(options: { user?: string; password?: string } = {}) {
    const expected = options.user ? `Basic ${Buffer.from(`${options.user}:${options.password ?? ""}`).toString("base64")}` : undefined;
    this.#server = createServer((_request, response) => response.writeHead(405).end("CONNECT only"));
    this.#server.on("connect", (request, client: Socket, head: Buffer) => {
      const authorization = request.headers["proxy-authorization"];
      this.tunnels.push({ target: request.url ?? "", authorization });
      if (expected && authorization !== expected) {
        client.end("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n");
        return;
      }
      const [host, port] = [
        request.url!.slice(0, request.url!.lastIndexOf(":")),
        Number(request.url!.slice(request.url!.lastIndexOf(":") + 1)),
      ];
      const upstream = connect(port, host, () => {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on("close", () => this.#sockets.delete(socket));
        socket.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as { port: number }).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
