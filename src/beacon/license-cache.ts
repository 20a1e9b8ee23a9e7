import type { Logger } from "pino";
import type { LicenseStore } from "./license-store.ts";
import { type License, type LicenseLookup, LicenseRegistry } from "./licenses.ts";

/** How often a replica asks whether the licenses changed: a change through any replica is in force within ~1 s. */
export const LICENSE_POLL_MS = 1000;

/**
 * The database's licenses in memory, so that verify and ingest look a key up without a query. Every `pollMs` it
 * reads the licenses' version (one row) and, when another replica (or this one) changed it, loads them again.
 * Verifications are noted here and written to the database on the same tick (last_verified_at), off the request path.
 */
export class LicenseCache implements LicenseLookup {
  readonly #store: LicenseStore;
  readonly #logger: Logger;
  readonly #pollMs: number;
  #registry = new LicenseRegistry([]);
  #version = -1;
  #verified = new Map<string, Date>();
  #timer: NodeJS.Timeout | undefined;
  #failing = false;
  #closed = false;

  private constructor(store: LicenseStore, logger: Logger, pollMs: number) {
    this.#store = store;
    this.#logger = logger;
    this.#pollMs = pollMs;
  }

  /** Loads the licenses, then keeps them current until close(). */
  static async open(store: LicenseStore, options: { logger: Logger; pollMs?: number }): Promise<LicenseCache> {
    const cache = new LicenseCache(store, options.logger, options.pollMs ?? LICENSE_POLL_MS);
    await cache.refresh();
    cache.#schedule();
    return cache;
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = setTimeout(async () => {
      try {
        await this.refresh();
        if (this.#failing) this.#logger.info("licenses read from the database again");
        this.#failing = false;
      } catch (err) {
        // The licenses last read stay in force while the database is away.
        if (!this.#failing) this.#logger.warn({ err }, "cannot read the licenses from the database; the last ones read stay in force");
        this.#failing = true;
      }
      this.#schedule();
    }, this.#pollMs);
    this.#timer.unref();
  }

  /** Loads the licenses again when their version moved; writes the verifications noted since the last time. */
  async refresh(): Promise<void> {
    const version = await this.#store.version();
    if (version !== this.#version) {
      this.#registry = new LicenseRegistry(await this.#store.all());
      this.#version = version;
    }
    await this.#flushVerified();
  }

  async #flushVerified(): Promise<void> {
    if (this.#verified.size === 0) return;
    const verified = this.#verified;
    this.#verified = new Map();
    try {
      await this.#store.recordVerified(verified);
    } catch (err) {
      // Kept for the next tick, unless a later verification of the same license came meanwhile.
      for (const [id, at] of verified) if (!this.#verified.has(id)) this.#verified.set(id, at);
      throw err;
    }
  }

  findByKey(key: string): License | undefined {
    return this.#registry.findByKey(key);
  }

  findById(id: string): License | undefined {
    return this.#registry.findById(id);
  }

  noteVerified(licenseId: string, at: Date): void {
    this.#verified.set(licenseId, at);
  }

  /** Stops polling and writes the last verifications. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#flushVerified().catch((err) => this.#logger.warn({ err }, "cannot record the last license verifications"));
  }
}
