/**
 * RFC 3339 date-times as platforms write them (`Z`, `+00:00` from Python's `isoformat()`, `-05:30`, any fraction),
 * turned into one canonical UTC text: the same instant is always the same text, whatever offset it came with.
 *
 * Canonical form: `YYYY-MM-DDTHH:MM:SS.sssZ` (what `Date.prototype.toISOString` writes), followed by the sender's
 * digits past the millisecond when any of them is not zero (`.123456Z`). Digits are carried as text, never through a
 * `Date`, so no precision is lost or rounded; trailing zeros are dropped down to milliseconds (`.500000` is `.500`).
 */

const SHAPE = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))?$/;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;

/** The canonical UTC text of `text`, or why it is not an RFC 3339 date-time with an offset (never echoing it). */
export function normaliseTimestamp(text: string): { ok: true; value: string } | { ok: false; problem: string } {
  const match = SHAPE.exec(text);
  if (!match) {
    return {
      ok: false,
      problem: "must be an RFC 3339 date-time with a UTC offset, e.g. 2026-01-31T12:00:00Z or 2026-01-31T12:00:00.123456+00:00",
    };
  }
  const [, y, mo, d, h, mi, s, fraction = "", zulu, sign, offsetHours, offsetMinutes] = match as unknown as (string | undefined)[];
  if (zulu === undefined && sign === undefined) {
    return {
      ok: false,
      problem: "has no UTC offset (a time without one is ambiguous): end it with Z or +hh:mm, e.g. 2026-01-31T12:00:00Z",
    };
  }
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12) return { ok: false, problem: "is not a date: the month must be 01-12" };
  const lastDay = month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1]!;
  if (day < 1 || day > lastDay) return { ok: false, problem: `is not a date: month ${mo} of ${y} has days 01-${lastDay}` };
  if (hour > 23) return { ok: false, problem: "is not a time: the hour must be 00-23" };
  if (minute > 59) return { ok: false, problem: "is not a time: the minute must be 00-59" };
  // RFC 3339 allows second 60 for a leap second; no clock in UTC-as-POSIX (JavaScript, Python, databases) has it.
  if (second > 59) return { ok: false, problem: "is not a time: the second must be 00-59 (leap seconds are not taken)" };
  let offset = 0;
  if (sign !== undefined) {
    const [oh, om] = [Number(offsetHours), Number(offsetMinutes)];
    if (oh > 23 || om > 59)
      return { ok: false, problem: "has no valid UTC offset: it must be +hh:mm or -hh:mm, hours 00-23, minutes 00-59" };
    offset = (sign === "+" ? 1 : -1) * (oh * 60 + om);
  }
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
  const instant = new Date(0);
  instant.setUTCFullYear(year, month - 1, day);
  instant.setUTCHours(hour, minute - offset, second, 0);
  const utcYear = instant.getUTCFullYear();
  if (utcYear < 0 || utcYear > 9999) return { ok: false, problem: "is outside the years 0000-9999 once in UTC" };
  const digits = fraction.padEnd(3, "0").replace(/(?<=\d{3})0+$/, "");
  return { ok: true, value: `${instant.toISOString().slice(0, 19)}.${digits}Z` };
}

/** Orders two canonical timestamps by instant (plain text order fails when one has more fraction digits). */
export function compareTimestamps(a: string, b: string): number {
  const key = (t: string) => t.slice(0, -1).padEnd(64, "0");
  const [ka, kb] = [key(a), key(b)];
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}
