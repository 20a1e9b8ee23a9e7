import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import type Database from "better-sqlite3";
import type { AuthRequest, Installation } from "../protocol/controlplane-auth.ts";
import type { ProviderToken } from "./auth-token-exchange.ts";
import type { SecretBox } from "./secret-box.ts";

// The auth service's tables: auth requests (each with its single-use state) and the installations they made.

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS auth_requests (
  auth_id TEXT PRIMARY KEY, provider_id TEXT NOT NULL,
  state_hash TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'completed', 'failed')), error TEXT,
  created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
  consumed_at INTEGER,
  updated_at INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS installations (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE, provider_id TEXT NOT NULL, installation_id INTEGER,
  auth_id TEXT NOT NULL REFERENCES auth_requests(auth_id), token_sealed TEXT NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX IF NOT EXISTS installations_by_provider ON installations(provider_id, installation_id) WHERE installation_id IS NOT NULL;
`;

export interface AuthRequestRow {
  auth_id: string;
  provider_id: string;
  state_hash: string;
  status: "pending" | "completed" | "failed";
  error: string | null;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}

export interface InstallationRow {
  id: string;
  provider_id: string;
  installation_id: number | null;
  auth_id: string;
  token_sealed: string;
  created_at: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const sha256 = (text: string) => createHash("sha256").update(text).digest();
const iso = (ms: number) => new Date(ms).toISOString();

/** A state the callback refused, and why (said to the user: it never tells more than the state's own holder knows). */
export type Claim = { authId: string } | { refused: string };

/**
 * Auth requests and installations in the control plane's SQLite file. A state is `<auth_id>.<secret>`; only the
 * secret's SHA-256 is stored, and a claim consumes it with one compare-and-set, so a state works once.
 */
export class AuthStore {
  readonly #db: Database.Database;

  constructor(db: Database.Database) {
    this.#db = db;
    db.exec(SCHEMA);
  }

  create(providerId: string, now: number, ttlMs: number): { row: AuthRequestRow; state: string } {
    const authId = randomUUID();
    const secret = randomBytes(32).toString("base64url");
    const row: AuthRequestRow = {
      auth_id: authId,
      provider_id: providerId,
      state_hash: sha256(secret).toString("hex"),
      status: "pending",
      error: null,
      created_at: now,
      expires_at: now + ttlMs,
      consumed_at: null,
    };
    this.#db
      .prepare(
        "INSERT INTO auth_requests (auth_id, provider_id, state_hash, status, created_at, expires_at, updated_at) VALUES (?, ?, ?, 'pending', ?, ?, ?)",
      )
      .run(authId, providerId, row.state_hash, now, row.expires_at, now);
    return { row, state: `${authId}.${secret}` };
  }

  get(authId: string): AuthRequestRow | undefined {
    return this.#db.prepare<[string], AuthRequestRow>("SELECT * FROM auth_requests WHERE auth_id = ?").get(authId);
  }

  /** Consumes `state` when it is a pending, unexpired state of `providerId`: at most one caller ever gets it. */
  claim(providerId: string, state: string, now: number): Claim {
    const dot = state.indexOf(".");
    const authId = state.slice(0, dot);
    const row = dot > 0 && UUID.test(authId) ? this.get(authId) : undefined;
    if (!row || !timingSafeEqual(sha256(state.slice(dot + 1)), Buffer.from(row.state_hash, "hex")))
      return { refused: "it is not a state this control plane issued" };
    if (row.provider_id !== providerId) return { refused: "it was issued for another provider" };
    if (row.consumed_at !== null || row.status !== "pending") return { refused: "it has already been used" };
    if (now >= row.expires_at) return { refused: "it has expired" };
    const taken = this.#db
      .prepare("UPDATE auth_requests SET consumed_at = ?, updated_at = ? WHERE auth_id = ? AND consumed_at IS NULL AND status = 'pending'")
      .run(now, now, authId);
    return taken.changes === 1 ? { authId } : { refused: "it has already been used" };
  }

  fail(authId: string, error: string, now: number): void {
    this.#db
      .prepare("UPDATE auth_requests SET status = 'failed', error = ?, updated_at = ? WHERE auth_id = ? AND status = 'pending'")
      .run(error, now, authId);
  }

  /** The recorded installation of `providerId` with this provider installation id, if any. */
  installationOf(providerId: string, installationId: number): InstallationRow | undefined {
    return this.#db
      .prepare<[string, number], InstallationRow>("SELECT * FROM installations WHERE provider_id = ? AND installation_id = ?")
      .get(providerId, installationId);
  }

  /**
   * Completes a claimed request and records its installation. "closed" when the request was closed meanwhile
   * (failed as interrupted); "taken" when the installation id is already recorded for this provider: an install
   * never re-binds a known installation to another auth request's token. Either way nothing is recorded.
   */
  complete(
    authId: string,
    providerId: string,
    installationId: number | undefined,
    tokenSealed: string,
    now: number,
  ): "recorded" | "closed" | "taken" {
    return this.#db.transaction(() => {
      const pending = this.get(authId)?.status === "pending";
      if (!pending) return "closed";
      if (installationId !== undefined && this.installationOf(providerId, installationId)) return "taken";
      this.#db.prepare("UPDATE auth_requests SET status = 'completed', updated_at = ? WHERE auth_id = ?").run(now, authId);
      this.#db
        .prepare(
          "INSERT INTO installations (id, provider_id, installation_id, auth_id, token_sealed, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .run(randomUUID(), providerId, installationId ?? null, authId, tokenSealed, now, now);
      return "recorded";
    })();
  }

  /** Completes a claimed request whose redirect reported an update of an installation: nothing else to record. */
  completeUpdate(authId: string, now: number): void {
    this.#db
      .prepare("UPDATE auth_requests SET status = 'completed', updated_at = ? WHERE auth_id = ? AND status = 'pending'")
      .run(now, authId);
  }

  /** Requests whose exchange a stopped control plane left unfinished: they can never complete. */
  failInterrupted(now: number): number {
    return this.#db
      .prepare(
        "UPDATE auth_requests SET status = 'failed', error = 'the control plane stopped during the token exchange', updated_at = ? WHERE status = 'pending' AND consumed_at IS NOT NULL",
      )
      .run(now).changes;
  }

  installations(page: { limit: number; offset: number }): InstallationRow[] {
    return this.#db
      .prepare<[number, number], InstallationRow>("SELECT * FROM installations ORDER BY seq LIMIT ? OFFSET ?")
      .all(page.limit, page.offset);
  }

  installation(id: string): InstallationRow | undefined {
    return this.#db.prepare<[string], InstallationRow>("SELECT * FROM installations WHERE id = ?").get(id);
  }
}

export function toAuthRequest(row: AuthRequestRow, now: number, issued?: { state: string; authorizeUrl: string | null }): AuthRequest {
  const expired = row.status === "pending" && row.consumed_at === null && now >= row.expires_at;
  return {
    auth_id: row.auth_id,
    provider_id: row.provider_id,
    state: issued?.state ?? null,
    authorize_url: issued?.authorizeUrl ?? null,
    status: expired ? "expired" : row.status,
    error: row.error,
    created_at: iso(row.created_at),
    expires_at: iso(row.expires_at),
  };
}

export function toInstallation(row: InstallationRow): Installation {
  return {
    id: row.id,
    provider_id: row.provider_id,
    installation_id: row.installation_id,
    auth_id: row.auth_id,
    created_at: iso(row.created_at),
  };
}

/** The installation's token, opened (for what acts on the provider as the installation). */
export function installationToken(db: Database.Database, box: SecretBox, id: string): ProviderToken | undefined {
  const row = new AuthStore(db).installation(id);
  return row && (JSON.parse(box.open(row.token_sealed)) as ProviderToken);
}
