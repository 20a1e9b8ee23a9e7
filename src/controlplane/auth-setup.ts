import type Database from "better-sqlite3";
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { HttpError } from "../errors.ts";
import { Answer, type HttpRequest } from "../http/exchange.ts";
import type { HttpServer } from "../http/server.ts";
import { parseRequest } from "../http/validate.ts";
import { ListQuery, pageAnswer } from "../protocol/controlplane-lists.ts";
import { SetupCallbackQuery } from "../protocol/controlplane-auth.ts";
import type { ApiKeys } from "../http/api-keys.ts";
import { setupPage, type SetupOutcome } from "./auth-pages.ts";
import type { ControlPlaneConfig } from "./config.ts";
import type { SecretBox } from "./secret-box.ts";
import { AuthStore, toAuthRequest, toInstallation } from "./auth-store.ts";
import { exchangeCode, TokenExchangeError, type ProviderToken } from "./auth-token-exchange.ts";

// The auth service (v2): auth requests issue a single-use state, the provider's browser redirect brings it back
// to the setup callback with a code, and the code becomes a token, sealed in an installation.

type Providers = ControlPlaneConfig["auth"]["providers"];
type Provider = Providers[string];

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
  now: Clock;
  /** How long the token exchange may take (default 10 s). */
  exchangeTimeoutMs?: number;
}

/** The auth service routes: auth requests and installations (the API key), and the setup callback (the state). */
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
      if (!provider)
        throw new HttpError("EGRESS_ERR_AUTH_PROVIDER_NOT_FOUND", `no auth provider ${providerId}: configure it under auth.providers`);
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
      if (!row) throw new HttpError("EGRESS_ERR_AUTH_REQUEST_NOT_FOUND", `no auth request ${request.params.auth_id}`);
      return toAuthRequest(row, now());
    },
    { authorize },
  );

  server.get(
    "/v2/auth/installations",
    (request) => {
      const page = parseRequest(ListQuery, request.query, "query");
      return pageAnswer(store.installations(page).map(toInstallation), page.offset);
    },
    { authorize },
  );

  // The one route without X-Api-Key: the provider's browser redirect cannot carry it; the single-use state can.
  server.get("/v2/auth/setup/{provider_id}", (request) => setupCallback(request, { ...deps, store, providerOf }));
}

interface CallbackContext extends AuthRouteDeps {
  store: AuthStore;
  providerOf: (id: string) => Provider | undefined;
}

type Page = (outcome: Omit<SetupOutcome, "providerId" | "installationId">) => Answer;

/** GET /v2/auth/setup/{provider_id}: the provider's redirect, answered with a page (or JSON) saying how it went. */
async function setupCallback(request: HttpRequest, ctx: CallbackContext): Promise<Answer> {
  const { store, now } = ctx;
  const query = parseRequest(SetupCallbackQuery, request.query, "query");
  const providerId = request.params.provider_id!;
  const base = { providerId, installationId: query.installation_id };
  const page: Page = (outcome) => setupPage({ ...base, ...outcome }, request.headers.accept);
  const provider = ctx.providerOf(providerId);
  if (!provider) {
    return page({
      status: "failed",
      httpStatus: 404,
      error: "unknown_provider",
      errorDescription: "This control plane has no such auth provider; check the app's setup URL.",
    });
  }

  if (query.error !== undefined) return providerError(request, query, providerId, page, ctx);

  // An update carries no code, but it too must bring back a state this control plane issued: without one, anyone
  // could have the control plane answer a success page and log what they chose. It is refused as an unknown state.
  const update = query.setup_action === "update";
  if (!update && (!query.code || !query.state)) {
    return page({
      status: "failed",
      httpStatus: 400,
      error: "invalid_request",
      errorDescription: "The provider's redirect carried no code or no state. Start the installation again.",
    });
  }
  const claim = store.claim(providerId, query.state ?? "", now());
  if ("refused" in claim) {
    request.log.warn({ providerId, reason: claim.refused }, "setup callback: state refused");
    const errorDescription = `The state was refused: ${claim.refused}. Start the installation again.`;
    return page({ status: "failed", httpStatus: 400, error: "invalid_state", errorDescription });
  }
  if (update) {
    store.completeUpdate(claim.authId, now());
    request.log.info({ providerId, authId: claim.authId, installationId: query.installation_id }, "setup callback: installation updated");
    return page({ status: "updated", httpStatus: 200 });
  }
  const installationId = query.installation_id;
  if (installationId !== undefined && store.installationOf(providerId, installationId)) {
    return installationTaken(request, { providerId, authId: claim.authId, installationId, page }, ctx);
  }

  return exchangeAndRecord(request, { query, code: query.code!, provider, providerId, authId: claim.authId, page }, ctx);
}

/**
 * An install naming an installation id already recorded for this provider: refused (409), its token kept. The id
 * comes from the redirect's query, which the user controls; a provider gives each new installation a new id, so
 * a second install of a known one is a replay, never a reinstall: it must not re-bind that installation's token.
 */
function installationTaken(
  request: HttpRequest,
  taken: { providerId: string; authId: string; installationId: number; page: Page },
  ctx: CallbackContext,
): Answer {
  const { providerId, authId, installationId, page } = taken;
  ctx.store.fail(authId, `installation ${installationId} is already recorded`, ctx.now());
  request.log.warn({ providerId, authId, installationId }, "setup callback: installation already recorded");
  const errorDescription = `Installation ${installationId} is already recorded; its token is kept. Install the app anew.`;
  return page({ status: "failed", httpStatus: 409, error: "installation_exists", errorDescription });
}

/** The provider reported an error: the auth request, if the state is ours, fails with it. */
function providerError(request: HttpRequest, query: SetupCallbackQuery, providerId: string, page: Page, ctx: CallbackContext): Answer {
  const { store, now } = ctx;
  const reported = query.error!;
  const claim = query.state ? store.claim(providerId, query.state, now()) : undefined;
  const authId = claim && "authId" in claim ? claim.authId : undefined;
  if (authId) store.fail(authId, `the provider reported ${loggable(reported)}`, now());
  request.log.warn({ providerId, authId, error: loggable(reported) }, "setup callback: the provider reported an error");
  // Anyone can craft this URL: without a state this control plane issued, the page shows an error code only,
  // never the query's free text (a phishing line on our page). With one, the provider's description too.
  const error = /^[\w.-]{1,64}$/.test(reported) ? reported : "provider_error";
  const errorDescription = authId ? query.error_description : "The provider reported an error. Start the installation again.";
  return page({ status: "failed", httpStatus: 400, error, errorDescription });
}

/** Turns the code into a token and seals it in an installation; the auth request completes or fails with why. */
async function exchangeAndRecord(
  request: HttpRequest,
  claimed: { query: SetupCallbackQuery; code: string; provider: Provider; providerId: string; authId: string; page: Page },
  ctx: CallbackContext,
): Promise<Answer> {
  const { store, now } = ctx;
  const { query, provider, providerId, authId, page } = claimed;
  let token: ProviderToken;
  try {
    token = await exchangeCode(provider, claimed.code, { timeoutMs: ctx.exchangeTimeoutMs ?? 10_000, now });
  } catch (err) {
    store.fail(authId, err instanceof TokenExchangeError ? err.message : "internal error during the token exchange", now());
    if (!(err instanceof TokenExchangeError)) throw err;
    request.log.warn({ providerId, authId, errorCode: err.code, reason: err.message }, "setup callback: token exchange failed");
    return page({
      status: "failed",
      httpStatus: err.httpStatus,
      error: "token_exchange_failed",
      errorDescription: `${err.message}. Start the installation again.`,
    });
  }
  const recorded = store.complete(authId, providerId, query.installation_id, ctx.box.seal(JSON.stringify(token)), now());
  if (recorded === "closed") {
    const errorDescription = "The auth request was closed while its token exchange ran. Start the installation again.";
    return page({ status: "failed", httpStatus: 409, error: "auth_request_closed", errorDescription });
  }
  if (recorded === "taken") {
    return installationTaken(request, { providerId, authId, installationId: query.installation_id!, page }, ctx);
  }
  request.log.info({ providerId, authId, installationId: query.installation_id }, "setup callback: installation recorded");
  return page({ status: "installed", httpStatus: 200 });
}
