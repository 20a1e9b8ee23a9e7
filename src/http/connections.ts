import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/**
 * Caps a server's open connections so that idle or slow clients cannot take every file descriptor: at the cap, a
 * new connection closes the oldest one that has no request in progress (a keep-alive between requests, or one that
 * never sent anything), else the oldest busy one that has shown no credential (`trust`), or is itself closed when all
 * are busy and trusted. A connection must send its first request's headers
 * within `firstRequestMs` (Node's headersTimeout only starts with the first byte). `crowded()` tells the server
 * when only the reserve is left, so that it serves only the routes that must answer.
 */
export class ConnectionGuard {
  /** Open connections, oldest first, with their requests in progress and whether one carried a credential. */
  readonly #open = new Map<Socket, { busy: number; trusted: boolean }>();
  readonly #cap: number;
  readonly #reserved: number;
  #refused = 0;
  #evicted = 0;

  constructor(server: Server, options: { maxConnections: number; reservedConnections: number; firstRequestMs: number }) {
    this.#cap = options.maxConnections;
    this.#reserved = Math.min(options.reservedConnections, options.maxConnections - 1);
    server.on("connection", (socket: Socket) => this.#admit(socket, options.firstRequestMs));
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      request.socket.setTimeout(0); // the first-request timer; Node sets its keep-alive timer after each answer
      const state = this.#stateOf(request.socket);
      if (!state) return;
      state.busy++;
      response.once("close", () => state.busy--);
    });
  }

  /** True when the open connections have reached the reserve: serve only the routes that must answer. */
  crowded(): boolean {
    return this.#open.size > this.#cap - this.#reserved;
  }

  get stats(): { open: number; refused: number; evicted: number } {
    return { open: this.#open.size, refused: this.#refused, evicted: this.#evicted };
  }

  /** Closes every connection without a request in progress (Node's closeIdleConnections skips those that never sent one). */
  closeIdle(): void {
    for (const [socket, state] of this.#open) if (state.busy === 0) socket.destroy();
  }

  /** A request on `socket` carried a valid credential: the connection is never displaced by one that has shown none. */
  trust(socket: Socket): void {
    const state = this.#stateOf(socket);
    if (state) state.trusted = true;
  }

  /** The admitted connection a request's socket is: behind TLS, the TCP socket it wraps. */
  #stateOf(socket: Socket): { busy: number; trusted: boolean } | undefined {
    return this.#open.get((socket as Socket & { _parent?: Socket })._parent ?? socket);
  }

  #admit(socket: Socket, firstRequestMs: number): void {
    if (this.#open.size >= this.#cap && !this.#makeRoom()) {
      this.#refused++;
      socket.destroy();
      return;
    }
    this.#open.set(socket, { busy: 0, trusted: false });
    socket.once("close", () => this.#open.delete(socket));
    // On timeout, Node's server destroys a socket whose request and response do not handle it.
    socket.setTimeout(firstRequestMs);
  }

  /**
   * At the cap, the oldest connection with no request in progress makes room; with every connection busy, the
   * oldest one that has shown no credential (its request, a slow anonymous body or a verify, is cut): anonymous
   * clients cannot hold every connection against the sidecars whose tokens the beacon knows. Only when all are busy
   * and trusted is the newcomer refused.
   */
  #makeRoom(): boolean {
    return this.#evictFirst((state) => state.busy === 0) || this.#evictFirst((state) => !state.trusted);
  }

  #evictFirst(evictable: (state: { busy: number; trusted: boolean }) => boolean): boolean {
    for (const [socket, state] of this.#open) {
      if (!evictable(state)) continue;
      this.#open.delete(socket);
      this.#evicted++;
      socket.destroy();
      return true;
    }
    return false;
  }
}
