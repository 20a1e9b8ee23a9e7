import { isIPv6 } from "node:net";
import { endpointTemplate } from "./endpoint-template.ts";

// Removes secrets and identifiers from free text (log bodies, span names, status messages). The text comes
// from the sender, so every pattern must run in linear time: each one starts only where a run of its
// characters starts (a negative lookbehind), and bounded or disjoint quantifiers leave nothing to backtrack.
// Passes run in order; later passes never see what an earlier one removed.

const urlPattern = /(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,31}:\/\/[^\s/?#"'<>`]*[^\s?#"'<>`]*(?:[?#][^\s"'<>`]*)?/gi;
const authScheme = /\b(Bearer|Basic)[ \t]+[^\s"',;]+/gi;
const jwt = /(?<![\w-])eyJ[\w-]*\.[\w-]+\.[\w-]*/g;
// `api_key=...`, `"password": "..."`, `X-Api-Key: ...`: the key keeps, the value goes. "tokens" (counts) is not a secret.
const secretAssignment =
  /(?<![\w.-])([\w.-]{0,64}?(?:key|token|password|passwd|pwd|secret|credentials?))(["']?[ \t]{0,3}[:=][ \t]{0,3})(?:"[^"\n]{0,256}"?|'[^'\n]{0,256}'?|[^\s,;&"'<>]+)/gi;
const prefixedSecret = /(?<![\w-])(?:sk-|lsv2_|lic-|ghp_|gho_|ghs_|ghu_|github_pat_|xox[abposr]-)[\w-]+/g;
const email = /(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+/g;
const uuid = /(?<![0-9a-z])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-z])/gi;
const ipv6Candidate = /(?<![\w:.])[0-9a-f:.]*:[0-9a-f:.]*/gi;
const ipv4 = /(?<![\d.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?!\.?\d)/g;
// Long tokens that mix letters and digits: API keys, session ids, trace ids pasted into messages.
const longToken = /(?<![\w-])[\w-]{24,}/g;
const hasLetter = /[a-z]/i;
const hasDigit = /\d/;

// Letters and digits only, shorter than a long token: no pattern below can match (each needs punctuation, a
// blank or 24 characters), and most attribute values ("POST", "backend", "200") are like this.
const plainWord = /^[a-z0-9]{0,23}$/i;

/** `text` with e-mails, credentials, tokens, UUIDs, IP addresses and URL query strings replaced by placeholders. */
export function scrubText(text: string): string {
  if (plainWord.test(text)) return text;
  return text
    .replace(urlPattern, scrubUrl)
    .replace(authScheme, (_match, scheme: string) => `${scheme} <redacted>`)
    .replace(jwt, "<jwt>")
    .replace(secretAssignment, (_match, key: string, separator: string) => `${key}${separator}<redacted>`)
    .replace(prefixedSecret, "<redacted>")
    .replace(email, "<email>")
    .replace(uuid, "<uuid>")
    .replace(ipv6Candidate, scrubIpv6)
    .replace(ipv4, (match, ...octets: string[]) => (octets.slice(0, 4).every((o) => Number(o) <= 255) ? "<ip>" : match))
    .replace(longToken, (match) => (hasLetter.test(match) && hasDigit.test(match) ? "<redacted>" : match));
}

/** Keeps scheme, host and port and the templated path; drops credentials, query and fragment. */
function scrubUrl(match: string): string {
  // Sentence punctuation after a URL is not part of it. Trimmed by hand: a `[.,]+$` regex backtracks.
  let end = match.length;
  while (end > 0 && ".,;:!)]".includes(match[end - 1]!)) end--;
  const url = match.slice(0, end);
  const trailing = match.slice(end);

  const authorityStart = url.indexOf("://") + 3;
  let authorityEnd = authorityStart;
  while (authorityEnd < url.length && !"/?#".includes(url[authorityEnd]!)) authorityEnd++;
  const authority = url.slice(authorityStart, authorityEnd);
  const host = authority.slice(authority.lastIndexOf("@") + 1);

  let pathEnd = authorityEnd;
  while (pathEnd < url.length && !"?#".includes(url[pathEnd]!)) pathEnd++;
  const path = url.slice(authorityEnd, pathEnd);
  return `${url.slice(0, authorityStart)}${host}${path === "" ? "" : endpointTemplate(path)}${trailing}`;
}

function scrubIpv6(match: string): string {
  // Longest textual IPv6 is 45 characters; a longer run of hex, dots and colons is something else.
  if (match.length > 64) return match;
  // A sentence may end right after the address ("from fe80::1."): try without trailing dots and colons.
  let end = match.length;
  while (end > 2 && !isIPv6(match.slice(0, end)) && ".:".includes(match[end - 1]!)) end--;
  return isIPv6(match.slice(0, end)) ? `<ip>${match.slice(end)}` : match;
}
