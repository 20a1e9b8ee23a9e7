import { Answer } from "../http/exchange.ts";

// What the auth setup callback shows the user its provider sent back: a small self-contained HTML page for a
// browser, or the same outcome as JSON for anything else (the interface declares the callback's 200 as
// application/json: docs/PROTOCOL.md, "Auth service").

/** How one setup callback ended. */
export interface SetupOutcome {
  status: "installed" | "updated" | "failed";
  httpStatus: number;
  providerId: string;
  installationId?: number | undefined;
  /** A short error code (the provider's, or ours: invalid_state, token_exchange_failed, ...). */
  error?: string | undefined;
  /** What happened and what to do, in a sentence or two. Never a token, code or secret. */
  errorDescription?: string | undefined;
}

/** Provider-supplied text shown at most this long: a page, not an echo of whatever the URL carried. */
const MAX_SHOWN = 500;

const TITLES: Record<SetupOutcome["status"], string> = {
  installed: "Installation complete",
  updated: "Installation updated",
  failed: "Installation failed",
};

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

const clip = (text: string) => (text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}…` : text);

/** The q of the most specific range of `accept` that matches `type/subtype` (0 when none does). */
function quality(
  ranges: readonly { type: string; subtype: string; q: number }[],
  type: string,
  subtype: string,
  allowAny: boolean,
): number {
  let best = { specificity: 0, q: 0 };
  for (const range of ranges) {
    const specificity =
      range.type === type && range.subtype === subtype
        ? 3
        : range.type === type && range.subtype === "*"
          ? 2
          : allowAny && range.type === "*" && range.subtype === "*"
            ? 1
            : 0;
    if (specificity > best.specificity) best = { specificity, q: range.q };
  }
  return best.q;
}

/**
 * Whether an Accept header asks for HTML: text/html (or text/*) accepted, and not less than application/json.
 * A bare `*\/*` (curl, fetch) or no header gets JSON; a browser's `text/html,...,*\/*;q=0.8` gets HTML.
 */
export function prefersHtml(accept: string | string[] | undefined): boolean {
  const header = Array.isArray(accept) ? accept.join(",") : accept;
  if (!header) return false;
  const ranges = header.split(",").map((part) => {
    const [media = "", ...params] = part.split(";").map((p) => p.trim().toLowerCase());
    const [type = "", subtype = ""] = media.split("/");
    const qParam = params.find((p) => p.startsWith("q="));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    return { type, subtype, q: Number.isFinite(q) ? q : 0 };
  });
  const html = quality(ranges, "text", "html", false);
  return html > 0 && html >= quality(ranges, "application", "json", true);
}

function message(outcome: SetupOutcome): string {
  const provider = `<strong>${escapeHtml(outcome.providerId)}</strong>`;
  switch (outcome.status) {
    case "installed":
      return `The control plane is now connected to ${provider}. You can close this window.`;
    case "updated":
      return `The installation's access on ${provider} was updated. You can close this window.`;
    case "failed":
      return `The installation on ${provider} could not be completed.`;
  }
}

function htmlPage(outcome: SetupOutcome): string {
  const title = TITLES[outcome.status];
  const rows: [string, string | number | undefined][] = [
    ["Provider", outcome.providerId],
    ["Installation", outcome.installationId],
    ["Error", outcome.error && clip(outcome.error)],
    ["Description", outcome.errorDescription && clip(outcome.errorDescription)],
  ];
  const details = rows
    .filter((row): row is [string, string | number] => row[1] !== undefined && row[1] !== "")
    .map(([name, value]) => `<dt>${name}</dt><dd>${escapeHtml(String(value))}</dd>`)
    .join("");
  // No script, no external resource: the page's URL carries the code and state, and nothing here may send them on.
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>${title}</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#1f2328}
h1{font-size:1.5rem}.failed h1{color:#b42318}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{color:#57606a}dd{margin:0;overflow-wrap:anywhere}
</style>
</head>
<body class="${outcome.status}">
<h1>${title}</h1>
<p>${message(outcome)}</p>
<dl>${details}</dl>
</body>
</html>
`;
}

/** The outcome as the request's Accept header prefers it: an HTML page, or `{status, provider_id, ...}` JSON. */
export function setupPage(outcome: SetupOutcome, accept: string | string[] | undefined): Answer {
  // A result page is the user's alone: not cached, and its URL (code, state) not passed on as a referrer.
  const headers = { "cache-control": "no-store", "referrer-policy": "no-referrer" };
  if (prefersHtml(accept)) return new Answer(outcome.httpStatus, htmlPage(outcome), "text/html; charset=utf-8", headers);
  const body = {
    status: outcome.status,
    provider_id: outcome.providerId,
    ...(outcome.installationId !== undefined && { installation_id: outcome.installationId }),
    ...(outcome.error !== undefined && { error: clip(outcome.error) }),
    ...(outcome.errorDescription !== undefined && { error_description: clip(outcome.errorDescription) }),
  };
  return new Answer(outcome.httpStatus, body, undefined, headers);
}
