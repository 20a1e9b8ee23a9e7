import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../clock.ts";

/** One signed-in browser: who (the admin key's fingerprint, never the key) and its forms' CSRF token. */
export interface ConsoleSession {
  actor: string;
  csrfToken: string;
  createdAtMs: number;
  lastSeenAtMs: number;
}

export interface SessionLimits {
  /** Signed out after this long without a page (8 h). */
  idleMs: number;
  /** Signed out this long after signing in, however busy (24 h). */
  absoluteMs: number;
  /** Sessions kept at most; the least recently used goes first. */
  maxSessions: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = { idleMs: 8 * 3_600_000, absoluteMs: 24 * 3_600_000, maxSessions: 1000 };

const digest = (id: string) => createHash("sha256").update(id).digest("base64url");

/**
 * The console's sessions, in this process's memory: a restart signs everyone out, and replicas behind one address
 * need sticky sessions (docs/beacon.md, "The web console"). Kept by the SHA-256 of the cookie's value, so that
 * not even a heap dump holds a usable session id. Time and randomness are injected for tests.
 */
export class ConsoleSessions {
  readonly #sessions = new Map<string, ConsoleSession>();
  readonly #limits: SessionLimits;
  readonly #now: Clock;
  readonly #random: (bytes: number) => Buffer;

  constructor(options: { limits?: SessionLimits; now?: Clock; random?: (bytes: number) => Buffer } = {}) {
    this.#limits = options.limits ?? DEFAULT_SESSION_LIMITS;
    this.#now = options.now ?? Date.now;
    this.#random = options.random ?? randomBytes;
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** A new session for `actor`; returns the cookie's value (256 random bits), which only the browser keeps. */
  open(actor: string): { id: string; session: ConsoleSession } {
    const id = this.#random(32).toString("base64url");
    const now = this.#now();
    const session = { actor, csrfToken: this.#random(32).toString("base64url"), createdAtMs: now, lastSeenAtMs: now };
    this.#sessions.set(digest(id), session);
    // Map order is use order (find re-inserts): the first is the least recently used.
    while (this.#sessions.size > this.#limits.maxSessions) this.#sessions.delete(this.#sessions.keys().next().value!);
    return { id, session };
  }

  /** The live session of a cookie's value, its idle clock restarted; undefined when unknown or expired. */
  find(id: string | undefined): ConsoleSession | undefined {
    if (!id) return undefined;
    const key = digest(id);
    const session = this.#sessions.get(key);
    if (!session) return undefined;
    const now = this.#now();
    this.#sessions.delete(key);
    if (now - session.lastSeenAtMs >= this.#limits.idleMs || now - session.createdAtMs >= this.#limits.absoluteMs) return undefined;
    session.lastSeenAtMs = now;
    this.#sessions.set(key, session);
    return session;
  }

  close(id: string | undefined): void {
    if (id) this.#sessions.delete(digest(id));
  }
}

/** Whether a form's CSRF token is the session's: compared in constant time. */
export function csrfTokenMatches(session: ConsoleSession, token: string | undefined): boolean {
  if (token === undefined) return false;
  const a = Buffer.from(session.csrfToken);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Failed sign-ins per client address: after `max` within `windowMs`, that address is refused until its window
 * ends. At most `maxTracked` addresses are remembered (the oldest window forgotten first), and all of them together
 * get `max * 10` per window: memory stays bounded, and many addresses cannot try keys fast either.
 */
export class SignInLimiter {
  readonly #failures = new Map<string, { count: number; startMs: number }>();
  readonly #all = { count: 0, startMs: 0 };
  readonly #max: number;
  readonly #windowMs: number;
  readonly #maxTracked: number;
  readonly #now: Clock;

  constructor(options: { max?: number; windowMs?: number; maxTracked?: number; now?: Clock } = {}) {
    this.#max = options.max ?? 10;
    this.#windowMs = options.windowMs ?? 60_000;
    this.#maxTracked = options.maxTracked ?? 1024;
    this.#now = options.now ?? Date.now;
  }

  get tracked(): number {
    return this.#failures.size;
  }

  /** Milliseconds until `address` may try again; 0 when it may now. */
  retryAfterMs(address: string): number {
    const now = this.#now();
    const own = this.#failures.get(address);
    const ownWait = own && own.count >= this.#max ? own.startMs + this.#windowMs - now : 0;
    const allWait = this.#all.count >= this.#max * 10 ? this.#all.startMs + this.#windowMs - now : 0;
    return Math.max(0, ownWait, allWait);
  }

  failed(address: string): void {
    const now = this.#now();
    if (now - this.#all.startMs >= this.#windowMs) Object.assign(this.#all, { count: 0, startMs: now });
    this.#all.count++;
    let own = this.#failures.get(address);
    if (!own || now - own.startMs >= this.#windowMs) {
      this.#failures.delete(address);
      own = { count: 0, startMs: now };
      this.#failures.set(address, own);
      while (this.#failures.size > this.#maxTracked) this.#failures.delete(this.#failures.keys().next().value!);
    }
    own.count++;
  }
}
