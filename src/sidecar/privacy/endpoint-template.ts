import { defaultVocabulary, type Vocabulary } from "./vocabulary.ts";

// Turns a request path into a route template, so an endpoint can be counted without the identifiers in it
// leaving the instance. A segment is kept only when it is a known route word (the product's routes, the platform's,
// the operator's `privacy.vocabulary`); every other becomes a parameter, named after a known collection
// (`/threads/{thread_id}`), else `{param}`: `/users/johnsmith` -> `/users/{param}`. Query and fragment go.
// Plain string scanning, no backtracking regexes: values come from the sender.

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
const versionSegment = /^v\d{1,2}(?:(?:alpha|beta)\d?)?$/;
/** Placeholders a template may already hold: the filter's own (and the product's route parameters, in `routes`). */
const placeholderNames: ReadonlySet<string> = new Set(["{param}", "{id}", ...collectionPlaceholders.values()]);
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
export function endpointTemplate(value: string, vocabulary: Vocabulary = defaultVocabulary()): string {
  let rest = value.trim();
  let method = "";
  const methodMatch = httpMethod.exec(rest);
  if (methodMatch) {
    method = `${methodMatch[1]!.toUpperCase()} `;
    rest = rest.slice(methodMatch[0].length);
  }
  rest = pathOnly(rest);
  return method + templatePath(rest, vocabulary.routes);
}

function pathOnly(value: string): string {
  let path = value;
  const scheme = urlScheme.exec(path);
  if (scheme || path.startsWith("//")) {
    // Drop the authority (host, port, credentials): everything up to the first "/" after it.
    const authorityStart = scheme ? scheme[0].length : 2;
    const slash = path.indexOf("/", authorityStart);
    const query = queryOrFragment(path, authorityStart);
    path = slash === -1 || (query !== -1 && query < slash) ? "/" : path.slice(slash);
  }
  const end = queryOrFragment(path, 0);
  return end === -1 ? path : path.slice(0, end);
}

// The regexes run only on segments that start as their matches must ("{", "v"): every data point has an endpoint.
const OPEN_BRACE = 0x7b;
const LOWER_V = 0x76;
/** The longest version segment versionSegment matches ("v12alpha1"). */
const LONGEST_VERSION = 9;

/**
 * Per routes set, the longest segment templatePath could keep: a longer one (an id, a UUID) becomes a parameter
 * without being cut out of the path and looked up. A vocabulary's sets are built once and never changed
 * (vocabulary.ts); were one changed, a new long word would only be templated, never leak.
 */
const longestKeptOf = new WeakMap<ReadonlySet<string>, number>();
function longestKept(routes: ReadonlySet<string>): number {
  let longest = longestKeptOf.get(routes);
  if (longest === undefined) {
    longest = LONGEST_VERSION;
    for (const word of [...routes, ...collectionPlaceholders.keys(), ...placeholderNames]) longest = Math.max(longest, word.length);
    longestKeptOf.set(routes, longest);
  }
  return longest;
}

/** One scan, segment by segment, writing the template as it goes (a split and a join cost twice as much per point). */
function templatePath(path: string, routes: ReadonlySet<string>): string {
  const longest = longestKept(routes);
  let template = "";
  let previous: string | undefined;
  for (let start = 0; ; ) {
    const slash = path.indexOf("/", start);
    const end = slash === -1 ? path.length : slash;
    const placeholder = previous === undefined ? undefined : collectionPlaceholders.get(previous);
    previous = undefined;
    if (end - start > longest) template += placeholder ?? "{param}";
    else {
      const segment = path.slice(start, end);
      const first = segment.charCodeAt(0);
      // An already templated segment stays only when it names a placeholder the filter itself writes: "{johnsmith}"
      // is a name in braces.
      if (
        segment === "" ||
        (first === OPEN_BRACE && templatedSegment.test(segment) && (placeholderNames.has(segment) || routes.has(segment)))
      ) {
        template += segment;
      } else if (
        // A route word wins over an item of the collection before it: "/runs/stream", "/threads/search".
        collectionPlaceholders.has(segment) ||
        (first === LOWER_V && versionSegment.test(segment)) ||
        routes.has(segment)
      ) {
        previous = segment;
        template += segment;
      } else template += placeholder ?? "{param}";
    }
    if (slash === -1) return template;
    template += "/";
    start = slash + 1;
  }
}

/** Where the query or the fragment starts ("?" or "#", whichever comes first), or -1. */
function queryOrFragment(text: string, from: number): number {
  const query = text.indexOf("?", from);
  const fragment = text.indexOf("#", from);
  return query === -1 ? fragment : fragment === -1 ? query : Math.min(query, fragment);
}
