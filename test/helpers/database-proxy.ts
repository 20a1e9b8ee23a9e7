import { createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy on 127.0.0.1 in front of the test's PostgreSQL server, to take the database away and bring it back:
 * `down()` cuts every connection and cuts each new one as it arrives (as a server that is restarting), `up()` lets
 * them through again. Counts the connections tried while down.
 */
export class DatabaseProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #down = false;
  /** Connections tried while the database was away. */
  triedWhileDown = 0;
  readonly port: number;

  private constructor(server: Server, port: number) {
    this.#server = server;
    this.port = port;
  }

  static async start(target = { host: "127.0.0.1", port: 5432 }): Promise<DatabaseProxy> {
    let proxy: DatabaseProxy | undefined;
    const server = createServer((client) => proxy!.#accept(client, target));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    proxy = new DatabaseProxy(server, typeof address === "object" && address ? address.port : 0);
    return proxy;
  }

  /** `url` (a database on the real server) as reached through the proxy. */
  through(url: string): string {
    const proxied = new URL(url);
    proxied.port = String(this.port);
    return proxied.toString();
  }

  #accept(client: Socket, target: { host: string; port: number }): void {
    if (this.#down) {
      this.triedWhileDown++;
      client.destroy();
      return;
    }
    const upstream = createConnection(target);
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => {
        this.#sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  }

  down(): void {
    this.#down = true;
    for (const socket of this.#sockets) socket.destroy();
  }

  up(): void {
    this.#down = false;
  }

  async close(): Promise<void> {
    this.down();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
