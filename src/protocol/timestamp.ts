/**
 * RFC 3339 date-times as platforms write them (`Z`, `+00:00` from Python's `isoformat()`, `-05:30`, any fraction),
 * turned into one canonical UTC text: the same instant is always the same text, whatever offset it came with.
 *
 * Canonical form: `YYYY-MM-DDTHH:MM:SS.sssZ` (what `Date.prototype.toISOString` writes), followed by the sender's
 * digits past the millisecond when any of them is not zero (`.123456Z`). Digits are carried as text, never through a
 * `Date`, so no precision is lost or rounded; trailing zeros are dropped down to milliseconds (`.500000` is `.500`).
 */

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;

const SHAPE_PROBLEM = "must be an RFC 3339 date-time with a UTC offset, e.g. 2026-01-31T12:00:00Z or 2026-01-31T12:00:00.123456+00:00";
const NO_OFFSET_PROBLEM = "has no UTC offset (a time without one is ambiguous): end it with Z or +hh:mm, e.g. 2026-01-31T12:00:00Z";

type Result = { ok: true; value: string } | { ok: false; problem: string };
const fail = (problem: string): Result => ({ ok: false, problem });

/** The number written by the `length` ASCII digits at `start`, or -1 when any of them is not a digit. */
function digitsAt(text: string, start: number, length: number): number {
  let n = 0;
  for (let i = start; i < start + length; i++) {
    const d = text.charCodeAt(i) - 48;
    if (!(d >= 0 && d <= 9)) return -1; // NaN past the end too
    n = n * 10 + d;
  }
  return n;
}

// Character codes: compared as numbers, nothing is allocated per character (this runs four times per billing record).
const DASH = 45;
const COLON = 58;
const DOT = 46;
const PLUS = 43;
const UPPER_T = 84;
const UPPER_Z = 90;
const ZERO = 48;
const LOWER_T = 116;
const SPACE = 32;

/**
 * The canonical UTC text of `text`, or why it is not an RFC 3339 date-time with an offset (never echoing it).
 * Read by hand, one character at a time: it runs four times per billing record at intake, and a regular
 * expression with a dozen captures and a `Date` round trip cost more than the rest of the record's validation.
 */
export function normaliseTimestamp(text: string): Result {
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const hour = digitsAt(text, 11, 2);
  const minute = digitsAt(text, 14, 2);
  const second = digitsAt(text, 17, 2);
  const t = text.charCodeAt(10);
  const separators =
    text.charCodeAt(4) === DASH &&
    text.charCodeAt(7) === DASH &&
    (t === UPPER_T || t === LOWER_T || t === SPACE) &&
    text.charCodeAt(13) === COLON &&
    text.charCodeAt(16) === COLON;
  if (Math.min(year, month, day, hour, minute, second) < 0 || !separators) return fail(SHAPE_PROBLEM);
  let at = 19;
  let first = at; // the fraction's digits are text[first, at)
  if (text.charCodeAt(at) === DOT) {
    first = ++at;
    while (digitsAt(text, at, 1) >= 0) at++;
    if (at === first) return fail(SHAPE_PROBLEM);
  }
  const zoneLength = text.length - at;
  const sign = text.charCodeAt(at);
  const offsetMatch = zoneLength === 6 && (sign === PLUS || sign === DASH) && text.charCodeAt(at + 3) === COLON;
  const offsetHours = offsetMatch ? digitsAt(text, at + 1, 2) : -1;
  const offsetMinutes = offsetMatch ? digitsAt(text, at + 4, 2) : -1;
  const utc = zoneLength === 1 && (text[at] === "Z" || text[at] === "z");
  if (zoneLength === 0) return fail(NO_OFFSET_PROBLEM);
  if (!utc && (offsetHours < 0 || offsetMinutes < 0)) return fail(SHAPE_PROBLEM);
  if (month < 1 || month > 12) return fail("is not a date: the month must be 01-12");
  const lastDay = month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1]!;
  if (day < 1 || day > lastDay) return fail(`is not a date: month ${text.slice(5, 7)} of ${text.slice(0, 4)} has days 01-${lastDay}`);
  if (hour > 23) return fail("is not a time: the hour must be 00-23");
  if (minute > 59) return fail("is not a time: the minute must be 00-59");
  // RFC 3339 allows second 60 for a leap second; no clock in UTC-as-POSIX (JavaScript, Python, databases) has it.
  if (second > 59) return fail("is not a time: the second must be 00-59 (leap seconds are not taken)");
  if (offsetHours > 23 || offsetMinutes > 59)
    return fail("has no valid UTC offset: it must be +hh:mm or -hh:mm, hours 00-23, minutes 00-59");
  const offset = offsetHours > 0 || offsetMinutes > 0 ? (sign === PLUS ? 1 : -1) * (offsetHours * 60 + offsetMinutes) : 0;
  // Four times per billing record: the common cases build as little as they can (a string built of parts is copied
  // into one at its first comparison, which made timestamps a third of the intake's allocations).
  const fractionLength = at - first;
  const canonicalFractionSent = fractionLength === 3 || (fractionLength > 3 && text.charCodeAt(at - 1) !== ZERO);
  // Canonical as sent (what toISOString writes): the text itself.
  if (offset === 0 && t === UPPER_T && text.charCodeAt(at) === UPPER_Z && canonicalFractionSent) return { ok: true, value: text };
  const tail = fractionLength === 0 ? ".000Z" : `.${canonicalFraction(text.slice(first, at))}Z`;
  // At UTC already the date and time are the sender's digits; only an offset needs arithmetic.
  if (offset === 0) return { ok: true, value: (t === UPPER_T ? text.slice(0, 19) : `${text.slice(0, 10)}T${text.slice(11, 19)}`) + tail };
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
  const instant = new Date(0);
  instant.setUTCFullYear(year, month - 1, day);
  instant.setUTCHours(hour, minute - offset, second, 0);
  const utcYear = instant.getUTCFullYear();
  if (utcYear < 0 || utcYear > 9999) return fail("is outside the years 0000-9999 once in UTC");
  return { ok: true, value: instant.toISOString().slice(0, 19) + tail };
}

/** Milliseconds always, then the sender's further digits up to the last one that is not zero. */
function canonicalFraction(fraction: string): string {
  if (fraction.length <= 3) return fraction.padEnd(3, "0");
  let end = fraction.length;
  while (end > 3 && fraction.charCodeAt(end - 1) === ZERO) end--;
  return fraction.slice(0, end);
}

/** Orders two canonical timestamps by instant (plain text order fails when one has more fraction digits). */
export function compareTimestamps(a: string, b: string): number {
  // Same length, same layout: text order is instant order. Otherwise the shorter fraction reads as zeros.
  if (a.length === b.length) return a < b ? -1 : a > b ? 1 : 0;
  const end = Math.max(a.length, b.length) - 1; // the Z is not compared
  for (let i = 0; i < end; i++) {
    const ca = i < a.length - 1 ? a.charCodeAt(i) : ZERO;
    const cb = i < b.length - 1 ? b.charCodeAt(i) : ZERO;
    if (ca !== cb) return ca < cb ? -1 : 1;
  }
  return 0;
}
