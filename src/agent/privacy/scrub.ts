import { isIPv6 } from "node:net";
import { endpointTemplate } from "./endpoint-template.ts";

// Removes secrets and identifiers from free text (log bodies, span names, status messages). The text comes
// from the sender, so every pattern must run in linear time: each one starts only where a run of its
// characters starts (a negative lookbehind), and bounded or disjoint quantifiers leave nothing to backtrack.
// Passes run in order; later passes never see what an earlier one removed. A run of non-blank characters longer than
// MAX_TOKEN_CHARS is replaced before any pass sees it: the detectors' cost and their regex backtracking stack grow with
// the run they match (a 6 MiB word overflowed the stack), and no identifier or secret worth keeping is that long.

const urlPattern = /(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,31}:\/\/[^\s/?#"'<>`]*[^\s?#"'<>`]*(?:[?#][^\s"'<>`]*)?/gi;
// A bare absolute path in text ("GET /users/john.smith/settings", "/patients/jane.doe/records"): templated like an
// endpoint. It starts after a blank, a quote or the start, never inside a word, a number or a URL.
const barePath = /(?<![\w/.:%@-])\/[^\s"'<>`?#()]*(?:[?#][^\s"'<>`()]*)?/g;
const authScheme = /\b(Bearer|Basic)[ \t]+[^\s"',;]+/gi;
const jwt = /(?<![\w-])eyJ[\w-]*\.[\w-]+\.[\w-]*/g;
// `api_key=...`, `"password": "..."`, `X-Api-Key: ...`: the key keeps, the value goes. "tokens" (counts) is not a secret.
const secretAssignment =
  /(?<![\w.-])([\w.-]{0,64}?(?:key|token|password|passwd|pwd|secret|credentials?))(["']?[ \t]{0,3}[:=][ \t]{0,3})(?:"[^"\n]{0,256}"?|'[^'\n]{0,256}'?|[^\s,;&"'<>]+)/gi;
const prefixedSecret = /(?<![\w-])(?:sk-|lsv2_|lic-|ghp_|gho_|ghs_|ghu_|github_pat_|xox[abposr]-)[\w-]+/g;
// AWS access key ids (AKIA for users, ASIA for temporary credentials, and the other documented prefixes).
const awsKeyId = /(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}(?![A-Z0-9])/g;
// Base64 secrets (an AWS secret access key is 40 of these characters): a run with upper and lower case letters and
// digits, or with + or /, and no path shape (it does not start with "/").
const base64Secret = /(?<![A-Za-z0-9+/=])[A-Za-z0-9][A-Za-z0-9+/]{19,}={0,2}(?![A-Za-z0-9+/=])/g;
// E-mail addresses, in any script (IDN) and with "@" percent-encoded as in a URL (dave%40corp.example).
const email = /(?<![\p{L}\p{N}.+_%-])[\p{L}\p{N}.+_-]+(?:@|%40)[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+/giu;
// Digit runs with optional single spaces or dashes: card numbers are kept apart from other numbers by Luhn.
const cardCandidate = /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])/g;
// US social security numbers as written: 123-45-6789 (the areas never issued are left alone).
const ssn = /(?<![\d-])(\d{3})-(\d{2})-(\d{4})(?![\d-])/g;
// Phone numbers: an international "+CC ..." or the "(555) 123-4567" / "555-123-4567" / "555.123.4567" shapes.
const phone =
  /(?<![\w+])(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,3}|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}|\d{3}[.-]\d{3}[.-]\d{4})(?![\w-])/g;
// SQL with literals: quoted strings and numbers become "?" (OpenTelemetry's db statement sanitisation, in spirit).
// A statement's shape, not only its first word ("call to ..." and "update available" are English), wherever it
// starts ("query failed: SELECT ..."): each keyword found is checked in place (sticky), over a bounded stretch.
const sqlKeyword = /\b(?:SELECT|INSERT|UPDATE|DELETE|WITH|MERGE|CALL|EXEC)/gi;
const sqlShape =
  /(?:SELECT\b[^;]{0,160}?\bFROM\b|INSERT\s+INTO\b|UPDATE\s+[\w."`[\]]{1,128}\s+SET\b|DELETE\s+FROM\b|WITH\s+\w{1,64}\s+AS\s*\(|MERGE\s+INTO\b|CALL\s+[\w.]{1,128}\s*\(|EXEC(?:UTE)?\s+[\w.]{1,128})/iy;

/** Where an SQL statement starts in `text`, or -1. */
function sqlStart(text: string): number {
  sqlKeyword.lastIndex = 0;
  for (let match = sqlKeyword.exec(text); match; match = sqlKeyword.exec(text)) {
    sqlShape.lastIndex = match.index;
    if (sqlShape.test(text)) return match.index;
  }
  return -1;
}
const sqlNumber = /(?<![\w$.])-?\d+(?:\.\d+)?(?![\w$])/g;

/**
 * SQL with its quoted strings and numbers replaced by "?". Strings are found by a scan, not a regex: one may be
 * megabytes long with blanks in it, and a regex loop over it overflows the backtracking stack.
 */
function sqlWithoutLiterals(sql: string): string {
  const parts: string[] = [];
  let from = 0;
  for (let i = 0; i < sql.length; i++) {
    if (sql[i] !== "'" && sql[i] !== '"') continue;
    parts.push(sql.slice(from, i).replace(sqlNumber, "?"), "?");
    i = closingQuote(sql, i);
    from = i + 1;
  }
  parts.push(sql.slice(from).replace(sqlNumber, "?"));
  return parts.join("");
}

/** Where the string opened at `open` ends: its closing quote (after `\\x` escapes, and `''` inside '...'), or the end. */
function closingQuote(sql: string, open: number): number {
  const quote = sql[open];
  for (let i = open + 1; i < sql.length; i++) {
    if (sql[i] === "\\") i++;
    else if (sql[i] === quote) {
      if (quote === "'" && sql[i + 1] === "'") i++;
      else return i;
    }
  }
  return sql.length - 1;
}
const uuid = /(?<![0-9a-z])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-z])/gi;
const ipv6Candidate = /(?<![\w:.])[0-9a-f:.]*:[0-9a-f:.]*/gi;
const ipv4 = /(?<![\d.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?!\.?\d)/g;
// Long tokens that mix letters and digits: API keys, session ids, trace ids pasted into messages.
const longToken = /(?<![\w-])[\w-]{24,}/g;
const hasLetter = /[a-z]/i;

/** The longest run of non-blank characters the detectors scan; a longer one leaves as LONG_TOKEN, unread. */
export const MAX_TOKEN_CHARS = 1024;
export const LONG_TOKEN = "<long-token>";
const hasDigit = /\d/;

// Values no pattern below can match, and most attribute values ("POST", "backend", "200"): up to 12 letters and
// digits, or a lower-case word with digits (an AWS key id needs upper case, a card number 13 digits, a token 20).
const plainWord = /^(?:[a-zA-Z0-9]{0,12}|[a-z][a-z0-9]{0,18})$/;

/**
 * `text` with e-mails, credentials, keys and tokens, card numbers, SSNs, phone numbers, UUIDs, IP addresses, URL
 * credentials and query strings replaced by placeholders, and SQL literals by "?".
 */
export function scrubText(text: string): string {
  if (plainWord.test(text)) return text;
  const bounded = withoutLongTokens(text);
  const statement = sqlStart(bounded);
  const sql = statement >= 0 ? bounded.slice(0, statement) + sqlWithoutLiterals(bounded.slice(statement)) : bounded;
  return sql
    .replace(urlPattern, scrubUrl)
    .replace(barePath, (path) => endpointTemplate(path))
    .replace(authScheme, (_match, scheme: string) => `${scheme} <redacted>`)
    .replace(jwt, "<jwt>")
    .replace(awsKeyId, "<redacted>")
    .replace(secretAssignment, (_match, key: string, separator: string) => `${key}${separator}<redacted>`)
    .replace(prefixedSecret, "<redacted>")
    .replace(email, "<email>")
    .replace(uuid, "<uuid>")
    .replace(ipv6Candidate, scrubIpv6)
    .replace(ipv4, (match, ...octets: string[]) => (octets.slice(0, 4).every((o) => Number(o) <= 255) ? "<ip>" : match))
    .replace(ssn, (match, area: string, group: string, serial: string) => (validSsn(area, group, serial) ? "<ssn>" : match))
    .replace(cardCandidate, (match) => (isCardNumber(match.replace(/[ -]/g, "")) ? "<card>" : match))
    .replace(phone, "<phone>")
    .replace(base64Secret, (match) => (looksSecret(match) ? "<redacted>" : match))
    .replace(longToken, (match) => (hasLetter.test(match) && hasDigit.test(match) ? "<redacted>" : match));
}

/** `text` with each run of more than MAX_TOKEN_CHARS non-blank characters replaced by LONG_TOKEN: one pass, no regex. */
function withoutLongTokens(text: string): string {
  const parts: string[] = [];
  let kept = 0; // text before this index is in `parts`
  let start = 0; // where the current run of non-blank characters starts
  for (let i = 0; i <= text.length; i++) {
    if (i < text.length && !isBlank(text.charCodeAt(i))) continue;
    if (i - start > MAX_TOKEN_CHARS) {
      parts.push(text.slice(kept, start), LONG_TOKEN);
      kept = i;
    }
    start = i + 1;
  }
  if (kept === 0) return text;
  parts.push(text.slice(kept));
  return parts.join("");
}

/** The characters a regex's `\s` matches (so no pass's run of `[^\s]` can be longer than MAX_TOKEN_CHARS). */
function isBlank(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/** A base64-looking run that is a secret rather than a word: + or /, or upper and lower case and a digit. */
function looksSecret(run: string): boolean {
  if (/[+/]/.test(run)) return /[A-Za-z]/.test(run) && /\d/.test(run);
  return /[A-Z]/.test(run) && /[a-z]/.test(run) && /\d/.test(run);
}

/** A card network's number range (Amex, Diners, Visa, Mastercard, Discover, UnionPay, JCB) that passes the Luhn check. */
function isCardNumber(digits: string): boolean {
  return /^(?:3[0-9]|4|5[1-5]|2[2-7]|6[0-9])/.test(digits) && luhn(digits);
}

/** The Luhn check of a 13 to 19 digit number: how card numbers are told from other long numbers. */
function luhn(digits: string): boolean {
  if (digits.length < 13 || digits.length > 19) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

/** An SSN as issued: no area 000, 666 or 900-999, no group 00, no serial 0000. */
function validSsn(area: string, group: string, serial: string): boolean {
  return area !== "000" && area !== "666" && area[0] !== "9" && group !== "00" && serial !== "0000";
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
