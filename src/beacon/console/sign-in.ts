import { HttpError } from "../../errors.ts";
import type { HttpRequest } from "../../http/exchange.ts";
import type { HttpServer, RouteOptions } from "../../http/server.ts";
import type { AdminDeps } from "../admin/deps.ts";
import { cookieValue, failedAnswer, htmlAnswer, redirect, SESSION_COOKIE } from "./answers.ts";
import { loginPage } from "./layout.ts";
import { type ConsoleSessions, csrfTokenMatches, type SignInLimiter } from "./sessions.ts";

/** Sign-in and sign-out forms are a few hundred bytes. */
export const FORM_BODY = { body: { raw: ["application/x-www-form-urlencoded"] }, bodyLimit: { bytes: 8 * 1024 } } as const;

/** Secure only when a TLS-terminating proxy says the browser came over https: a Secure cookie on plain HTTP is lost. */
function sessionCookie(request: HttpRequest, value: string, maxAgeSeconds: number): string {
  const secure = request.headers["x-forwarded-proto"] === "https" ? "; Secure" : "";
  return `${SESSION_COOKIE}=${value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

/** A cross-site form post is refused: when the browser names the origin, its host must be the one asked. */
export function refuseCrossOrigin(request: HttpRequest): void {
  const origin = request.headers.origin;
  if (origin === undefined) return; // no Origin: the CSRF token (and SameSite=Strict) decide
  let host: string | undefined;
  try {
    host = new URL(origin).host;
  } catch {
    host = undefined; // "null" (a sandboxed frame, a file) is never ours
  }
  if (host === undefined || host !== request.headers.host)
    throw new HttpError("EGRESS_ERR_CONSOLE_FORM_REFUSED", "a form of another site cannot post to the console");
}

/**
 * The route options of a form that needs a session: the Origin and the session are checked from the headers before
 * any of the body is read (`authorize`); a post without a live session goes to the sign-in page, as a page would.
 */
export function sessionForm(sessions: ConsoleSessions): Pick<RouteOptions, "authorize" | "errors"> & typeof FORM_BODY {
  const signInNeeded = new WeakSet<HttpRequest>();
  return {
    ...FORM_BODY,
    authorize: (request) => {
      refuseCrossOrigin(request);
      if (sessions.find(cookieValue(request, SESSION_COOKIE))) return;
      signInNeeded.add(request);
      throw new HttpError("EGRESS_ERR_CONSOLE_FORM_REFUSED", "sign in first");
    },
    errors: (err, request) =>
      signInNeeded.has(request)
        ? redirect("/console/login")
        : failedAnswer(err, request, sessions.find(cookieValue(request, SESSION_COOKIE))),
  };
}

/** The form's fields; repeated fields keep the first. */
export const formOf = (request: HttpRequest) => new URLSearchParams((request.body as Buffer).toString("utf8"));

/**
 * POST /console/login (an admin key, checked as X-Api-Key is: a session cookie, or the form again; failures limited
 * per address) and POST /console/logout (the session's CSRF token required).
 */
export function registerSignIn(app: HttpServer, deps: AdminDeps, sessions: ConsoleSessions, limiter: SignInLimiter): void {
  app.post(
    "/console/login",
    async (request) => {
      refuseCrossOrigin(request);
      const address = request.remoteAddress ?? "unknown";
      // The key first: an admin's right key signs in even while others' failures hold the limit (behind a proxy
      // every browser has one address, and anyone could lock the admins out). Wrong keys over the limit wait; the
      // limit keeps a guesser's log and CPU cost down, admin keys of 16 characters and more keep guessing hopeless.
      let actor: string | undefined;
      try {
        actor = deps.auth.identifyKey(formOf(request).get("key") ?? "");
      } catch {
        actor = undefined;
      }
      const waitMs = limiter.retryAfterMs(address);
      if (actor === undefined && waitMs > 0) {
        const seconds = Math.ceil(waitMs / 1000);
        return htmlAnswer(429, loginPage(`Too many failed sign-ins: try again in ${seconds} s.`), { "retry-after": String(seconds) });
      }
      if (actor === undefined) {
        limiter.failed(address);
        request.log.warn({ remoteAddress: address }, "console sign-in refused: not an admin key");
        return htmlAnswer(401, loginPage("That is not an admin key of this beacon."));
      }
      const { id } = sessions.open(actor);
      request.log.info({ actor }, "console sign-in");
      await deps.store.licenses.audit({ actor, action: "console.sign-in", licenseId: null, detail: {} }, new Date(deps.now()));
      return redirect("/console", { "set-cookie": sessionCookie(request, id, 24 * 3600) });
    },
    { ...FORM_BODY, errors: (err, request) => failedAnswer(err, request) },
  );

  app.post(
    "/console/logout",
    async (request) => {
      const id = cookieValue(request, SESSION_COOKIE);
      const session = sessions.find(id);
      if (!session) return redirect("/console/login"); // ended since authorize looked
      if (!csrfTokenMatches(session, formOf(request).get("csrf") ?? undefined))
        throw new HttpError(
          "EGRESS_ERR_CONSOLE_FORM_REFUSED",
          "the form's CSRF token is missing or not this session's: reload the page and try again",
        );
      sessions.close(id);
      request.log.info({ actor: session.actor }, "console sign-out");
      await deps.store.licenses.audit(
        { actor: session.actor, action: "console.sign-out", licenseId: null, detail: {} },
        new Date(deps.now()),
      );
      return redirect("/console/login", { "set-cookie": sessionCookie(request, "", 0) });
    },
    sessionForm(sessions),
  );
}
