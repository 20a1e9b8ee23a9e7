// Turns a request path into a route template, so an endpoint can be counted without the identifiers in it
// leaving the instance. Segments are kept only when they look like a fixed route word; everything else
// becomes a placeholder. Plain string scanning, no backtracking regexes: values come from the sender.

/** The segment after one of these collections names one item of it. Kept short: `store` is a route word, not a collection. */
const collectionPlaceholders: ReadonlyMap<string, string> = new Map([
  ["a2a", "{assistant_id}"],
  ["assistants", "{assistant_id}"],
  ["threads", "{thread_id}"],
  ["runs", "{run_id}"],
  ["crons", "{cron_id}"],
  ["deployments", "{deployment_id}"],
  ["revisions", "{revision_id}"],
  ["listeners", "{listener_id}"],
]);

const httpMethod = /^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS|TRACE|CONNECT)\s+/i;
const urlScheme = /^[a-z][a-z0-9+.-]{0,31}:\/\//i;
const versionSegment = /^v\d{1,3}(?:(?:alpha|beta)\d{0,3})?$/;
// Lower-case route words only: an upper-case letter, a digit, a dot, "@" or "%" is how names and ids give themselves
// away (`/patients/jane.doe/records`, `/users/john%40corp.example`).
// Dots only in `.well-known` and a route word's file name (`agent-card.json`, `openapi.yaml`): `jane.doe` is a name.
const routeWord = /^(?:[a-z_-]{1,32}(?:\.(?:json|ya?ml|xml|txt|html?|js|css|ico|png|svg))?|\.well-known)$/;
const templatedSegment = /^\{[a-z][a-z0-9_]{0,40}\}$/;

/**
 * True when a value is a path, a URL or "METHOD /path", i.e. something endpointTemplate should shape
 * rather than scrubText.
 */
export function looksLikeEndpoint(value: string): boolean {
  const rest = value.replace(httpMethod, "");
  return rest.startsWith("/") || urlScheme.test(rest);
}

/**
 * `"GET https://h/threads/8d3e.../runs/17?x=1"` -> `"GET /threads/{thread_id}/runs/{run_id}"`.
 * Keeps an HTTP method word, drops scheme, host, query and fragment, and templates every path segment.
 */
export function endpointTemplate(value: string): string {
  let rest = value.trim();
  let method = "";
  const methodMatch = httpMethod.exec(rest);
  if (methodMatch) {
    method = `${methodMatch[1]!.toUpperCase()} `;
    rest = rest.slice(methodMatch[0].length);
  }
  rest = pathOnly(rest);
  return method + templatePath(rest);
}

function pathOnly(value: string): string {
  let path = value;
  const scheme = urlScheme.exec(path);
  if (scheme || path.startsWith("//")) {
    // Drop the authority (host, port, credentials): everything up to the first "/" after it.
    const authorityStart = scheme ? scheme[0].length : 2;
    const slash = path.indexOf("/", authorityStart);
    const query = firstOf(path, "?#", authorityStart);
    path = slash === -1 || (query !== -1 && query < slash) ? "/" : path.slice(slash);
  }
  const end = firstOf(path, "?#", 0);
  return end === -1 ? path : path.slice(0, end);
}

function templatePath(path: string): string {
  const segments = path.split("/");
  let previous: string | undefined;
  const out = segments.map((segment) => {
    const placeholder = previous === undefined ? undefined : collectionPlaceholders.get(previous);
    previous = undefined;
    if (segment === "" || templatedSegment.test(segment)) return segment;
    if (placeholder) return placeholder;
    if (collectionPlaceholders.has(segment) || versionSegment.test(segment) || routeWord.test(segment)) {
      previous = segment;
      return segment;
    }
    return "{id}";
  });
  return out.join("/");
}

function firstOf(text: string, chars: string, from: number): number {
  let first = -1;
  for (const c of chars) {
    const at = text.indexOf(c, from);
    if (at !== -1 && (first === -1 || at < first)) first = at;
  }
  return first;
}
