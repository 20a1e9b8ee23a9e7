import type pg from "pg";
import type { Logger } from "pino";
import { reconnectDelayMs } from "./database-unavailable.ts";

/** What the listener needs of a client: pg.Client, or a stand-in in a unit test. */
export interface ListenClient {
  connect(): Promise<unknown>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: "notification", listener: (message: pg.Notification) => void): unknown;
  once(event: "end", listener: () => void): unknown;
}

export interface ListenerOptions {
  /** A new, unconnected client each time (src/pg-pool.ts guardedClient: its errors are already handled). */
  client: () => ListenClient;
  channels: readonly string[];
  onNotification: (channel: string, payload: string) => void;
  /**
   * Runs after each reconnection, once LISTEN is in force again: what was notified while the connection was down
   * is lost, so the owner reads again what it would have been told.
   */
  onReconnect: () => void;
  logger: Logger;
}

/**
 * A LISTEN connection that outlives the database going away: when its connection ends (a restart, a failover,
 * pg_terminate_backend), it connects again with backoff, LISTENs again and tells its owner to catch up.
 */
export class DatabaseListener {
  readonly #options: ListenerOptions;
  #client: ListenClient | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** Reconnect attempts made so far (a test counts them per simulated hour). */
  attempts = 0;

  constructor(options: ListenerOptions) {
    this.#options = options;
  }

  /** Connects and LISTENs; throws when the database cannot be reached now (the service's start fails). */
  async start(): Promise<void> {
    this.#client = await this.#open();
  }

  get connected(): boolean {
    return this.#client !== undefined;
  }

  async #open(): Promise<ListenClient> {
    const client = this.#options.client();
    try {
      await client.connect();
      await client.query(this.#options.channels.map((channel) => `LISTEN ${channel}`).join("; "));
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    client.on("notification", (message) => this.#options.onNotification(message.channel, message.payload ?? ""));
    // 'end' follows every way a connection ends, with an error or without.
    client.once("end", () => this.#lost(client));
    return client;
  }

  #lost(client: ListenClient): void {
    if (this.#closed || client !== this.#client) return;
    this.#client = undefined;
    this.#options.logger.warn("the LISTEN connection to the database ended; reconnecting");
    this.#schedule(1);
  }

  #schedule(attempt: number): void {
    const delay = reconnectDelayMs(attempt);
    this.#timer = setTimeout(() => void this.#reconnect(attempt), delay);
    this.#timer.unref();
  }

  async #reconnect(attempt: number): Promise<void> {
    this.attempts++;
    let client: ListenClient;
    try {
      client = await this.#open();
    } catch (err) {
      if (this.#closed) return;
      const { code, message } = err as { code?: string; message?: string };
      this.#options.logger.warn({ attempt, code, reason: message }, "reconnecting the LISTEN connection failed; trying again");
      this.#schedule(attempt + 1);
      return;
    }
    if (this.#closed) return void (await client.end().catch(() => {}));
    this.#client = client;
    this.#options.logger.info({ attempt }, "the LISTEN connection is back");
    this.#options.onReconnect();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }
}
