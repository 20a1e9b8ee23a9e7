import { Answer, type HttpRequest } from "../../http/exchange.ts";
import type { HttpServer } from "../../http/server.ts";
import type { AdminDeps } from "../admin/deps.ts";
import { cookieValue, failedAnswer, htmlAnswer, redirect, SECURITY_HEADERS, SESSION_COOKIE } from "./answers.ts";
import { loginPage } from "./layout.ts";
import { instancesPage, licensePage, overviewPage } from "./pages.ts";
import { type ConsoleSession, ConsoleSessions, SignInLimiter } from "./sessions.ts";
import { registerSignIn } from "./sign-in.ts";
import { registerLicenseActions } from "./actions.ts";
import { CONSOLE_CSS } from "./style.ts";

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
  const sessionOf = (request: HttpRequest) => sessions.find(cookieValue(request, SESSION_COOKIE));

  const page = (render: (session: ConsoleSession, request: HttpRequest) => Promise<Answer>) => async (request: HttpRequest) => {
    const session = sessionOf(request);
    if (!session) return redirect("/console/login");
    try {
      return await render(session, request);
    } catch (err) {
      return failedAnswer(err, request, session);
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
  const css = { ...SECURITY_HEADERS, "cache-control": "max-age=300" };
  app.get("/console/console.css", () => new Answer(200, CONSOLE_CSS, "text/css; charset=utf-8", css), { quiet: true });
  app.get("/console/login", (request) => (sessionOf(request) ? redirect("/console") : htmlAnswer(200, loginPage())));
  registerSignIn(app, deps, sessions, options.limiter ?? new SignInLimiter());
  registerLicenseActions(app, deps, sessions);
}
