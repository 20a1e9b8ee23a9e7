import { HttpError } from "../../errors.ts";
import { errorAnswer } from "../../http/error-handling.ts";
import { Answer, type HttpRequest } from "../../http/exchange.ts";
import type { SafeHtml } from "./html.ts";
import { problemPage } from "./layout.ts";
import type { ConsoleSession } from "./sessions.ts";

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

export const htmlAnswer = (status: number, page: SafeHtml, headers: Record<string, string> = {}) =>
  new Answer(status, page.text, "text/html; charset=utf-8", { ...SECURITY_HEADERS, ...headers });

export const redirect = (location: string, headers: Record<string, string> = {}) =>
  new Answer(303, "", "text/plain; charset=utf-8", { ...SECURITY_HEADERS, location, ...headers });

/** An HTML error page for what a handler threw: its status, and its message only when it is one for users. */
export function failedAnswer(err: unknown, request: HttpRequest, session?: ConsoleSession): Answer {
  const answer = errorAnswer(err, request);
  const said = err instanceof HttpError ? err.message : "the page could not be shown; see the beacon's log";
  return htmlAnswer(answer.status, problemPage(`Error ${answer.status}`, said, session), answer.headers);
}

/** A cookie's value from the Cookie header; undefined when absent. */
export function cookieValue(request: HttpRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? "").split(";")) {
    const at = part.indexOf("=");
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}
