/**
 * What of another server's error answer may be shown in status, logs and errors. Deny by default: the server may
 * be a TLS-inspecting proxy, a wrong URL or hostile, and an endpoint that echoes requests echoes the license key and
 * billing bodies. So no free text (`detail` strings, a 422's `msg`, HTML, plain text) is ever kept: only the status
 * and what has a known safe shape: an error `code`, and a 422 `HTTPValidationError`'s field paths and types.
 */

import { mediaTypeOf } from "./http/body.ts";

const CODE = /^[A-Z0-9_]{1,64}$/;
const TYPE = /^[A-Za-z0-9_.]{1,64}$/;
/** A `loc` segment: a field name or an index; anything else (a key, a URL, a sentence) is not a field path. */
const LOC_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const MAX_PROBLEMS = 5;
const MAX_LOC_SEGMENTS = 12;

export interface RemoteAnswer {
  status: number;
  /** The parsed JSON, or the text when it is not JSON. */
  body: unknown;
  /** Media type, lower case, without parameters. */
  contentType?: string | undefined;
}

/** An answer's text as RemoteAnswer's body: its JSON, or the text itself (undefined when empty). */
export function parseAnswerText(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A fetch Response's media type, lower case, without parameters. */
export const mediaType = (response: Response): string => mediaTypeOf(response.headers.get("content-type"));

const field = (body: unknown, name: string): unknown =>
  body !== null && typeof body === "object" && !Array.isArray(body) ? (body as Record<string, unknown>)[name] : undefined;

/** The answer's `code` when it is one (upper-case letters, digits, `_`), else undefined. */
export function safeCode(body: unknown): string | undefined {
  const code = field(body, "code");
  return typeof code === "string" && CODE.test(code) ? code : undefined;
}

const isLocSegment = (part: unknown): boolean =>
  typeof part === "number" ? Number.isSafeInteger(part) && part >= 0 : typeof part === "string" && LOC_NAME.test(part);

/** `body.items.3.id`; undefined (shown as `?`) when any segment is not a field name or an index. */
function locPath(loc: unknown): string | undefined {
  if (!Array.isArray(loc) || loc.length === 0 || loc.length > MAX_LOC_SEGMENTS) return undefined;
  return loc.every(isLocSegment) ? loc.join(".") : undefined;
}

/** A 422's problems as `body.items.3.id invalid_format`: each entry's field path and type, never its `msg`. */
function validationProblems(body: unknown): string | undefined {
  const detail = field(body, "detail");
  if (!Array.isArray(detail) || detail.length === 0) return undefined;
  const shown = detail.slice(0, MAX_PROBLEMS).map((problem) => {
    const type = field(problem, "type");
    const where = locPath(field(problem, "loc")) ?? "?";
    return typeof type === "string" && TYPE.test(type) ? `${where} ${type}` : where;
  });
  const more = detail.length > MAX_PROBLEMS ? ` (and ${detail.length - MAX_PROBLEMS} more)` : "";
  return `${shown.join("; ")}${more}`;
}

/** Media types of a page, not of an answer. */
const PAGE_TYPES = new Set(["text/html", "application/xhtml+xml"]);
/**
 * How an HTML document starts, as browsers sniff one (WHATWG MIME Sniffing's HTML patterns): after whitespace or a
 * byte-order mark (`\s` has both), a comment, a doctype or one of these tags, in any letter case.
 */
const HTML_START = /^\s*<(?:!--|(?:!doctype\s+html|html|head|body|title|script|style|iframe|table|div|font|h1|br|a|b|p)(?=[\s/>]|$))/i;

/**
 * An HTML page (a proxy's, a captive portal's, a login page) rather than a server's answer: by its media type, or by
 * how its text starts when the type says otherwise or nothing. Never a delivery, whatever status it came with.
 */
export const isHtmlAnswer = (answer: RemoteAnswer): boolean =>
  PAGE_TYPES.has(answer.contentType ?? "") || (typeof answer.body === "string" && HTML_START.test(answer.body));

/**
 * An error answer in words safe to show: `503 EGRESS_ERR_BUSY`, `422: body.tenant_id invalid_format`,
 * `502 (HTML: a proxy or login page?)`. Whatever else the body held is left out.
 */
export function describeRemoteError(answer: RemoteAnswer): string {
  const code = safeCode(answer.body);
  const problems = answer.status === 422 ? validationProblems(answer.body) : undefined;
  const html = isHtmlAnswer(answer) ? " (HTML: a proxy or login page?)" : "";
  return `${answer.status}${code ? ` ${code}` : ""}${problems ? `: ${problems}` : ""}${html}`;
}
