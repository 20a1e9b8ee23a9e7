import { HttpError } from "../../errors.ts";
import { errorAnswer } from "../../http/error-handling.ts";
import { Answer, type HttpRequest } from "../../http/exchange.ts";
import type { HttpServer } from "../../http/server.ts";
import type { AdminDeps } from "../admin/deps.ts";
import type { SafeHtml } from "./html.ts";
import { loginPage, problemPage } from "./layout.ts";
import { instancesPage, licensePage, overviewPage } from "./pages.ts";
import { type ConsoleSession, ConsoleSessions, csrfTokenMatches, SignInLimiter } from "./sessions.ts";
import { CONSOLE_CSS } from "./style.ts";

export const SESSION_COOKIE = "egress_console";

/**
 * Every console answer's headers: nothing but our own style sheet and images may load, no script at all, forms post
 * only to us, no framing; never cached (pages show licenses); no referrer to other sites. (`no-referrer` would make
 * the browser send `Origin: null` with our own forms, which the Origin check then refuses.)
 */
export const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "cache-control": "no-store",
};

const HTML_TYPE = "text/html; charset=utf-8";
/** Sign-in and sign-out forms are a few hundred bytes. */
const FORM_BODY = { body: { raw: ["application/x-www-form-urlencoded"] }, bodyLimit: { bytes: 8 * 1024 } } as const;

const htmlAnswer = (status: number, page: SafeHtml, headers: Record<string, string> = {}) =>
  new Answer(status, page.text, HTML_TYPE, { ...SECURITY_HEADERS, ...headers });
const redirect = (location: string, headers: Record<string, string> = {}) =>
  new Answer(303, "", "text/plain; charset=utf-8", { ...SECURITY_HEADERS, location, ...headers });

/** A cookie's value from the Cookie header; undefined when absent. */
export function cookieValue(request: HttpRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? "").split(";")) {
    const at = part.indexOf("=");
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** Secure only when a TLS-terminating proxy says the browser came over https: a Secure cookie on plain HTTP is lost. */
function sessionCookie(request: HttpRequest, value: string, maxAgeSeconds: number): string {
  const secure = request.headers["x-forwarded-proto"] === "https" ? "; Secure" : "";
  return `${SESSION_COOKIE}=${value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

/** A cross-site form post is refused: when the browser names the origin, its host must be the one asked. */
function refuseCrossOrigin(request: HttpRequest): void {
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

/** The form's fields; repeated fields keep the first. */
const formOf = (request: HttpRequest) => new URLSearchParams((request.body as Buffer).toString("utf8"));

/**
 * The web console on the admin listener (docs/beacon.md, "The web console"): server-rendered pages, no script.
 * Signing in takes an admin key in a form and gives an HttpOnly, SameSite=Strict session cookie; every page needs
 * that session (else a redirect to the sign-in page), every post its CSRF token.
 */
export function registerConsoleRoutes(
  app: HttpServer,
  deps: AdminDeps,
  options: { sessions?: ConsoleSessions; limiter?: SignInLimiter } = {},
): void {
  const sessions = options.sessions ?? new ConsoleSessions();
  const limiter = options.limiter ?? new SignInLimiter();
  const sessionOf = (request: HttpRequest) => sessions.find(cookieValue(request, SESSION_COOKIE));

  /** An HTML error page for what a handler threw: its status, and its message only when it is one for users. */
  const failed = (err: unknown, request: HttpRequest, session?: ConsoleSession): Answer => {
    const answer = errorAnswer(err, request);
    const said = err instanceof HttpError ? err.message : "the page could not be shown; see the beacon's log";
    return htmlAnswer(answer.status, problemPage(`Error ${answer.status}`, said, session), answer.headers);
  };

  const page = (render: (session: ConsoleSession, request: HttpRequest) => Promise<Answer>) => async (request: HttpRequest) => {
    const session = sessionOf(request);
    if (!session) return redirect("/console/login");
    try {
      return await render(session, request);
    } catch (err) {
      return failed(err, request, session);
    }
  };

  const overview = page(async (session) => htmlAnswer(200, await overviewPage(deps, session)));
  app.get("/console", overview);
  app.get("/console/", overview);
  app.get(
    "/console/instances",
    page(async (session) => htmlAnswer(200, await instancesPage(deps, session))),
  );
  app.get(
    "/console/licenses/{id}",
    page(async (session, request) => {
      const { status, page } = await licensePage(deps, session, request.params.id!);
      return htmlAnswer(status, page);
    }),
  );
  app.get(
    "/console/console.css",
    () => new Answer(200, CONSOLE_CSS, "text/css; charset=utf-8", { ...SECURITY_HEADERS, "cache-control": "max-age=300" }),
    {
      quiet: true,
    },
  );

  app.get("/console/login", (request) => (sessionOf(request) ? redirect("/console") : htmlAnswer(200, loginPage())));

  app.post(
    "/console/login",
    (request) => {
      refuseCrossOrigin(request);
      const address = request.remoteAddress ?? "unknown";
      const waitMs = limiter.retryAfterMs(address);
      if (waitMs > 0) {
        const seconds = Math.ceil(waitMs / 1000);
        return htmlAnswer(429, loginPage(`Too many failed sign-ins: try again in ${seconds} s.`), { "retry-after": String(seconds) });
      }
      let actor: string;
      try {
        actor = deps.auth.identifyKey(formOf(request).get("key") ?? "");
      } catch {
        limiter.failed(address);
        request.log.warn({ remoteAddress: address }, "console sign-in refused: not an admin key");
        return htmlAnswer(401, loginPage("That is not an admin key of this beacon."));
      }
      const { id } = sessions.open(actor);
      request.log.info({ actor }, "console sign-in");
      return redirect("/console", { "set-cookie": sessionCookie(request, id, 24 * 3600) });
    },
    { ...FORM_BODY, errors: (err, request) => failed(err, request) },
  );

  app.post(
    "/console/logout",
    (request) => {
      refuseCrossOrigin(request);
      const id = cookieValue(request, SESSION_COOKIE);
      const session = sessions.find(id);
      if (!session) return redirect("/console/login");
      if (!csrfTokenMatches(session, formOf(request).get("csrf") ?? undefined))
        throw new HttpError(
          "EGRESS_ERR_CONSOLE_FORM_REFUSED",
          "the form's CSRF token is missing or not this session's: reload the page and try again",
        );
      sessions.close(id);
      request.log.info({ actor: session.actor }, "console sign-out");
      return redirect("/console/login", { "set-cookie": sessionCookie(request, "", 0) });
    },
    { ...FORM_BODY, errors: (err, request) => failed(err, request, sessionOf(request)) },
  );
}
