import { isIPv4, isIPv6 } from "node:net";
import { endpointTemplate } from "./endpoint-template.ts";
import { scanPieces } from "./pieces.ts";
import type { Vocabulary } from "./vocabulary.ts";
import { ID, IP, isSecretKey, keepWord, SECRET, TEXT } from "./words.ts";

// One run of non-blank characters of free text (a "chunk", normalised) as it leaves: whole-chunk shapes first (a URL,
// a path, an address, a token of a known form), then word by word. Within a chunk, what follows `=` is a value:
// kept only when the product's vocabulary knows it; what follows a credential's key is a secret.

/** What a chunk tells the next one. */
export interface ChunkEnd {
  /** The chunk ended with a key and `=` or `:` ("password:", "user="): the next chunk is its value. */
  assign?: "=" | ":";
  /** That key, or the chunk's last word when no separator followed yet ("password" then ":"). */
  key: string;
  /** The chunk ended inside a quoted value it opened ("pw='correct"): the quote, and whether a secret or a value. */
  quote?: { char: string; mode: "secret" | "value" };
}

const scheme = /^([a-z][a-z0-9+.-]{0,31}):\/\//i;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const jwt = /^eyJ[\w-]*\.[\w-]*/;
// Credentials of the common providers, by their documented prefixes (OpenAI/Anthropic, LangSmith, GitHub, Slack, AWS,
// Stripe, Google, GitLab, npm) and PEM armour lines.
const providerKey =
  /^(?:sk-|sk_|pk_|rk_|lsv2_|lic-|ghp_|gho_|ghs_|ghu_|ghr_|github_pat_|xox[abposr]-|AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|AIza|glpat-|npm_|whsec_)/;
const base64Run = /^[A-Za-z0-9+/_-]{16,}={0,2}$/;
const dottedName = /^[A-Za-z][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)+$/;
const windowsPath = /^[A-Za-z]:[\\/]/;
const ipWithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/;

/** A whole chunk in a shape of its own, as it leaves; undefined when it has none. */
function wholeShape(core: string, vocabulary: Vocabulary): string | undefined {
  // Each shape is tried only when the chunk has the character it cannot do without: most chunks are words.
  const url = core.includes("://") ? scheme.exec(core) : null;
  if (url) return scrubUrl(core, url[1]!, vocabulary);
  if (core.startsWith("/") && core.length > 1 && core[1] !== "/") return endpointTemplate(core, vocabulary);
  // Home directories and Windows paths ("~alice/.ssh", "C:\\Users\\alice"): templated like a path.
  if (core.startsWith("~") && core.length > 1) return `~${endpointTemplate(`/${core.slice(core[1] === "/" ? 2 : 1)}`, vocabulary)}`;
  if (windowsPath.test(core)) return `${core.slice(0, 2)}${endpointTemplate(core.slice(2).replaceAll("\\", "/"), vocabulary)}`;
  if (core.length <= 64 && (core.includes(".") || core.includes(":")) && isAddress(core)) return IP;
  if (core.length === 36 && uuid.test(core)) return ID;
  // A dotted name (a host, a file, a module: "payments.internal.corp") leaves only when the product knows it whole
  // (an attribute key: "service.name"): English words alone, or the product's, make a host name too ("billing.internal").
  if (core.includes(".") && dottedName.test(core)) return vocabulary.product.has(core.toLowerCase()) ? core : TEXT;
  if (core.length < 4) return undefined;
  if (jwt.test(core) || providerKey.test(core)) return SECRET;
  if (core.length >= 16 && base64Run.test(core) && /\d/.test(core) && /[A-Za-z]/.test(core) && (/[A-Z]/.test(core) || /[+/]/.test(core))) {
    return vocabulary.product.has(core.toLowerCase()) ? core : SECRET;
  }
  return undefined;
}

/** An IPv4 or IPv6 address, with a port or in brackets ("10.0.0.1:5432", "[::1]:443"). */
function isAddress(core: string): boolean {
  if (isIPv4(core) || isIPv6(core) || ipWithPort.test(core)) return true;
  // "[2001:db8::1]:443" (the "[" is taken off with the chunk's leading brackets).
  const close = core.indexOf("]");
  return close > 0 && isIPv6(core.slice(core.startsWith("[") ? 1 : 0, close));
}

/** Ends the value or secret that `=` or a credential's key started. */
const valueEnd = new Set(["&", ";", ",", "|"]);
const quoteChars = new Set(['"', "'", "`"]);
/** Joins the words of a key (`X-Api-Key`, `db.password`, `api_key`). */
const keyGlue = new Set(["-", ".", "_"]);

export interface ChunkStart {
  sentenceStart: boolean;
  /** The chunk is a value: of a credential ("secret") or of a key=value ("value"). */
  mode?: "secret" | "value";
}

/** The core of a chunk (its surrounding brackets, quotes and sentence punctuation taken off) as it leaves. */
export function scrubCore(core: string, vocabulary: Vocabulary, start: ChunkStart): { text: string; end: ChunkEnd } {
  if (start.mode === "secret") return { text: SECRET, end: { key: "" } };
  const shape = start.mode === undefined ? wholeShape(core, vocabulary) : undefined;
  if (shape !== undefined) return { text: shape, end: { key: "" } };
  const out: string[] = [];
  let mode: ChunkStart["mode"] = start.mode;
  let sentenceStart = start.sentenceStart;
  let key = "";
  let quote: string | undefined;
  for (const piece of scanPieces(core)) {
    if (mode !== undefined && quoteChars.has(piece.text))
      quote = quote === undefined ? piece.text : quote === piece.text ? undefined : quote;
    if (mode === "secret") {
      if (!valueEnd.has(piece.text) || quote !== undefined) continue;
      out.push(SECRET);
      mode = undefined;
    }
    if (piece.kind === "placeholder") {
      out.push(piece.text);
      key = "";
    } else if (piece.kind === "word") {
      out.push(keepWord(piece.text, vocabulary, { sentenceStart, value: mode === "value" }));
      key += piece.text;
    } else if (piece.text === "=" || (piece.text === ":" && isSecretKey(key))) {
      out.push(piece.text);
      mode = isSecretKey(key) ? "secret" : "value";
      key = "";
    } else {
      out.push(piece.text);
      if (valueEnd.has(piece.text)) mode = undefined;
      key = keyGlue.has(piece.text) ? key + piece.text : "";
    }
    sentenceStart = false;
  }
  if (mode === "secret") out.push(SECRET);
  return { text: out.join(""), end: { key, ...(quote !== undefined && mode !== undefined ? { quote: { char: quote, mode } } : {}) } };
}

/** Scheme (when a known word), host (an IP, or all product words, else <text>), templated path; no credentials or query. */
function scrubUrl(url: string, schemeName: string, vocabulary: Vocabulary): string {
  const authorityStart = schemeName.length + 3;
  let authorityEnd = authorityStart;
  while (authorityEnd < url.length && !"/?#".includes(url[authorityEnd]!)) authorityEnd++;
  const at = url.lastIndexOf("@", authorityEnd - 1);
  const authority = url.slice(at >= authorityStart ? at + 1 : authorityStart, authorityEnd);
  let host = authority;
  let port = "";
  if (authority.startsWith("[")) {
    const close = authority.indexOf("]");
    host = close > 0 ? authority.slice(1, close) : authority.slice(1);
    if (close > 0 && authority[close + 1] === ":") port = ":<num>";
  } else if (authority.includes(":")) {
    host = authority.slice(0, authority.lastIndexOf(":"));
    port = ":<num>";
  }
  let pathEnd = authorityEnd;
  while (pathEnd < url.length && !"?#".includes(url[pathEnd]!)) pathEnd++;
  const path = url.slice(authorityEnd, pathEnd);
  const known = host.split(".").every((label) => vocabulary.product.has(label.toLowerCase()));
  const hostOut = isIPv4(host) || isIPv6(host) ? IP : known ? host.toLowerCase() : TEXT;
  const schemeOut = vocabulary.product.has(schemeName.toLowerCase()) ? schemeName.toLowerCase() : TEXT;
  return `${schemeOut}://${hostOut}${port}${path === "" ? "" : endpointTemplate(path, vocabulary)}`;
}
