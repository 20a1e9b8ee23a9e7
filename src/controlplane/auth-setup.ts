import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import type Database from "better-sqlite3";
import type { Logger } from "pino";
import { HttpError } from "../errors.ts";
import { Answer, type HttpRequest } from "../http/exchange.ts";
import type { HttpServer } from "../http/server.ts";
import { parseRequest } from "../http/validate.ts";
import { ListQuery, SetupCallbackQuery, type AuthRequest, type Installation } from "../protocol/controlplane.ts";
import type { ApiKeys } from "./api-keys.ts";
import { setupPage, type SetupOutcome } from "./auth-pages.ts";
import type { ControlPlaneConfig } from "./config.ts";
import type { SecretBox } from "./secret-box.ts";
import { exchangeCode, TokenExchangeError, type ProviderToken } from "./auth-token-exchange.ts";

// The auth service (v2): auth requests issue a single-use state, the provider's browser redirect brings it back
// to the setup callback with a code, and the code becomes a token, sealed in an installation.

type Providers = ControlPlaneConfig["auth"]["providers"];
type Provider = Providers[string];

const SCHEMA = `
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

interface AuthRequestRow {
  auth_id: string;
  provider_id: string;
  state_hash: string;
  status: "pending" | "completed" | "failed";
  error: string | null;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}

interface InstallationRow {
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
type Claim = { authId: string } | { refused: string };

/**
 * Auth requests and installations in the control plane's SQLite file. A state is `<auth_id>.<secret>`; only the
 * secret's SHA-256 is stored, and a claim consumes it with one compare-and-set, so a state works once.
 */
class AuthStore {
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
      .prepare("INSERT INTO auth_requests (auth_id, provider_id, state_hash, status, created_at, expires_at, updated_at) VALUES (?, ?, ?, 'pending', ?, ?, ?)")
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
    if (!row || !timingSafeEqual(sha256(state.slice(dot + 1)), Buffer.from(row.state_hash, "hex"))) return { refused: "it is not a state this control plane issued" };
    if (row.provider_id !== providerId) return { refused: "it was issued for another provider" };
    if (row.consumed_at !== null || row.status !== "pending") return { refused: "it has already been used" };
    if (now >= row.expires_at) return { refused: "it has expired" };
    const taken = this.#db.prepare("UPDATE auth_requests SET consumed_at = ?, updated_at = ? WHERE auth_id = ? AND consumed_at IS NULL AND status = 'pending'").run(now, now, authId);
    return taken.changes === 1 ? { authId } : { refused: "it has already been used" };
  }

  fail(authId: string, error: string, now: number): void {
    this.#db.prepare("UPDATE auth_requests SET status = 'failed', error = ?, updated_at = ? WHERE auth_id = ? AND status = 'pending'").run(error, now, authId);
  }

  /**
   * Completes a claimed request and records its installation (a reinstall of a known installation id replaces its
   * token); false when the request was closed meanwhile (failed as interrupted), and nothing is recorded.
   */
  complete(authId: string, providerId: string, installationId: number | undefined, tokenSealed: string, now: number): boolean {
    return this.#db.transaction(() => {
      const completed = this.#db.prepare("UPDATE auth_requests SET status = 'completed', updated_at = ? WHERE auth_id = ? AND status = 'pending'").run(now, authId);
      if (completed.changes !== 1) return false;
      this.#db
        .prepare(
          `INSERT INTO installations (id, provider_id, installation_id, auth_id, token_sealed, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (provider_id, installation_id) WHERE installation_id IS NOT NULL
           DO UPDATE SET auth_id = excluded.auth_id, token_sealed = excluded.token_sealed, updated_at = excluded.updated_at`,
        )
        .run(randomUUID(), providerId, installationId ?? null, authId, tokenSealed, now, now);
      return true;
    })();
  }

  /** Requests whose exchange a stopped control plane left unfinished: they can never complete. */
  failInterrupted(now: number): number {
    return this.#db
      .prepare("UPDATE auth_requests SET status = 'failed', error = 'the control plane stopped during the token exchange', updated_at = ? WHERE status = 'pending' AND consumed_at IS NOT NULL")
      .run(now).changes;
  }

  installations(page: { limit: number; offset: number }): InstallationRow[] {
    return this.#db.prepare<[number, number], InstallationRow>("SELECT * FROM installations ORDER BY seq LIMIT ? OFFSET ?").all(page.limit, page.offset);
  }

  installation(id: string): InstallationRow | undefined {
    return this.#db.prepare<[string], InstallationRow>("SELECT * FROM installations WHERE id = ?").get(id);
  }
}

function toAuthRequest(row: AuthRequestRow, now: number, issued?: { state: string; authorizeUrl: string | null }): AuthRequest {
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

function toInstallation(row: InstallationRow): Installation {
  return { id: row.id, provider_id: row.provider_id, installation_id: row.installation_id, auth_id: row.auth_id, created_at: iso(row.created_at) };
}

/** The provider's authorize URL with client_id and state added, or null when none is configured. */
function authorizeUrl(provider: Provider, state: string): string | null {
  if (!provider.authorizeUrl) return null;
  const url = new URL(provider.authorizeUrl);
  url.searchParams.set("client_id", provider.clientId);
  url.searchParams.set("state", state);
  return url.toString();
}

/** A provider's error code or description as logged: short, one line. */
const loggable = (text: string) => text.replace(/\s+/g, " ").slice(0, 100);

export interface AuthRouteDeps {
  db: Database.Database;
  providers: Providers;
  stateTtlMs: number;
  apiKeys: ApiKeys;
  box: SecretBox;
  logger: Logger;
  now: () => number;
  /** How long the token exchange may take (default 10 s). */
  exchangeTimeoutMs?: number;
}

/** The installation's token, opened (for what acts on the provider as the installation). */
export function installationToken(db: Database.Database, box: SecretBox, id: string): ProviderToken | undefined {
  const row = new AuthStore(db).installation(id);
  return row && (JSON.parse(box.open(row.token_sealed)) as ProviderToken);
}

/** The auth service routes: auth requests and installations (X-Api-Key), and the setup callback (the state). */
export function registerAuthRoutes(server: HttpServer, deps: AuthRouteDeps): void {
  const store = new AuthStore(deps.db);
  const { now, logger } = deps;
  const interrupted = store.failInterrupted(now());
  if (interrupted > 0) logger.warn({ authRequests: interrupted }, "auth requests failed: interrupted during the token exchange");
  const providerOf = (id: string): Provider | undefined => (Object.hasOwn(deps.providers, id) ? deps.providers[id] : undefined);
  const authorize = (request: HttpRequest) => deps.apiKeys.check(request);

  server.post(
    "/v2/auth/providers/{provider_id}/auth-requests",
    (request) => {
      const providerId = request.params.provider_id!;
      const provider = providerOf(providerId);
      if (!provider) throw new HttpError(404, "ERR_AUTH_PROVIDER_NOT_FOUND", `no auth provider ${providerId}: configure it under auth.providers`);
      const at = now();
      const { row, state } = store.create(providerId, at, deps.stateTtlMs);
      request.log.info({ authId: row.auth_id, providerId }, "auth request created");
      return new Answer(201, toAuthRequest(row, at, { state, authorizeUrl: authorizeUrl(provider, state) }));
    },
    { body: "none", authorize },
  );

  server.get(
    "/v2/auth/auth-requests/{auth_id}",
    (request) => {
      const row = store.get(request.params.auth_id!);
      if (!row) throw new HttpError(404, "ERR_AUTH_REQUEST_NOT_FOUND", `no auth request ${request.params.auth_id}`);
      return toAuthRequest(row, now());
    },
    { authorize },
  );

  server.get(
    "/v2/auth/installations",
    (request) => {
      const page = parseRequest(ListQuery, request.query, "query");
      return { resources: store.installations(page).map(toInstallation), offset: page.offset };
    },
    { authorize },
  );

  // The one route without X-Api-Key: the provider's browser redirect cannot carry it; the single-use state can.
  server.get("/v2/auth/setup/{provider_id}", async (request) => {
    const query = parseRequest(SetupCallbackQuery, request.query, "query");
    const providerId = request.params.provider_id!;
    const base = { providerId, installationId: query.installation_id };
    const page = (outcome: Omit<SetupOutcome, "providerId" | "installationId">) => setupPage({ ...base, ...outcome }, request.headers.accept);
    const provider = providerOf(providerId);
    if (!provider) {
      return page({ status: "failed", httpStatus: 404, error: "unknown_provider", errorDescription: "This control plane has no such auth provider; check the app's setup URL." });
    }

    if (query.error !== undefined) {
      const claim = query.state ? store.claim(providerId, query.state, now()) : undefined;
      const authId = claim && "authId" in claim ? claim.authId : undefined;
      if (authId) store.fail(authId, `the provider reported ${loggable(query.error)}`, now());
      request.log.warn({ providerId, authId, error: loggable(query.error) }, "setup callback: the provider reported an error");
      // Anyone can craft this URL: without a state this control plane issued, the page shows an error code only,
      // never the query's free text (a phishing line on our page). With one, the provider's description too.
      const error = /^[\w.-]{1,64}$/.test(query.error) ? query.error : "provider_error";
      const errorDescription = authId ? query.error_description : "The provider reported an error. Start the installation again.";
      return page({ status: "failed", httpStatus: 400, error, errorDescription });
    }

    if (query.setup_action === "update") {
      request.log.info({ providerId, installationId: query.installation_id }, "setup callback: installation updated");
      return page({ status: "updated", httpStatus: 200 });
    }

    if (!query.code || !query.state) {
      return page({ status: "failed", httpStatus: 400, error: "invalid_request", errorDescription: "The provider's redirect carried no code or no state. Start the installation again." });
    }
    const claim = store.claim(providerId, query.state, now());
    if ("refused" in claim) {
      request.log.warn({ providerId, reason: claim.refused }, "setup callback: state refused");
      const errorDescription = `The state was refused: ${claim.refused}. Start the installation again.`;
      return page({ status: "failed", httpStatus: 400, error: "invalid_state", errorDescription });
    }

    const { authId } = claim;
    let token: ProviderToken;
    try {
      token = await exchangeCode(provider, query.code, { timeoutMs: deps.exchangeTimeoutMs ?? 10_000, now });
    } catch (err) {
      store.fail(authId, err instanceof TokenExchangeError ? err.message : "internal error during the token exchange", now());
      if (!(err instanceof TokenExchangeError)) throw err;
      request.log.warn({ providerId, authId, errorCode: err.code, reason: err.message }, "setup callback: token exchange failed");
      return page({ status: "failed", httpStatus: err.httpStatus, error: "token_exchange_failed", errorDescription: `${err.message}. Start the installation again.` });
    }
    if (!store.complete(authId, providerId, query.installation_id, deps.box.seal(JSON.stringify(token)), now())) {
      const errorDescription = "The auth request was closed while its token exchange ran. Start the installation again.";
      return page({ status: "failed", httpStatus: 409, error: "auth_request_closed", errorDescription });
    }
    request.log.info({ providerId, authId, installationId: query.installation_id }, "setup callback: installation recorded");
    return page({ status: "installed", httpStatus: 200 });
  });
}
