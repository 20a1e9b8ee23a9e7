import * as z from "zod";
import { normaliseTimestamp } from "./timestamp.ts";

/**
 * Nanosecond precision with an offset (`2026-01-31T12:00:00.123456789+00:00`): the format itself allows any number
 * of fraction digits. The canonical form is never longer than what was sent (or 24 characters), so it is bounded too.
 */
export const MAX_TIMESTAMP_LENGTH = 35;

/**
 * Every timestamp the product takes: an RFC 3339 date-time with a UTC offset (`Z`, `+00:00`, `-05:30`; `T`, `t` or a
 * space between date and time; any fraction), a real date and time, refused without an offset (ambiguous). Parsed
 * to its canonical UTC `Z` text (src/protocol/timestamp.ts): what is stored and sent is that.
 */
export const Timestamp = z
  .string()
  .max(MAX_TIMESTAMP_LENGTH, { message: `must be at most ${MAX_TIMESTAMP_LENGTH} characters` })
  // One check that parses and writes the canonical text back, rather than a transform: a transform makes a pipe,
  // which doubled the cost of the four times of every billing record (measured with bench/ on 20,000 records).
  .check((ctx) => {
    const parsed = normaliseTimestamp(ctx.value);
    if (parsed.ok) ctx.value = parsed.value;
    else ctx.issues.push({ code: "invalid_format", format: "datetime", message: parsed.problem, input: ctx.value });
  });

export const Uuid = z.uuid({ message: "must be a UUID" });
/** A UUID in its canonical, lower-case form: one id however the sender cased it (dedup compares text). */
export const CanonicalUuid = Uuid.toLowerCase();

export const Count = z.int({ message: "must be an integer" }).nonnegative({ message: "must not be negative" });

/** Largest value of a 32-bit signed column (PostgreSQL `integer`): what every stored count is held to. */
export const MAX_INT32 = 2 ** 31 - 1;

/**
 * A count the beacon stores in a column: it fits PostgreSQL's `integer`, and a month's sum of them fits SQLite's
 * 64-bit `sum()`. Refused above, rather than stored by one engine and refused by the other.
 */
export const ColumnCount = Count.max(MAX_INT32, { message: `must be at most ${MAX_INT32}` });

/** C0 and C1 control characters, DEL included (Unicode's Cc): no stored text needs them, and PostgreSQL's text cannot hold NUL. */
const CONTROL_CHARACTER = /\p{Cc}/u;

/**
 * Text the beacon stores as given: 1 to `maxLength` characters, well-formed Unicode (a lone surrogate would be
 * stored as U+FFFD), no control character. What is known safe on both engines, not a list of what is known bad.
 */
export function StoredText(maxLength: number) {
  return z
    .string()
    .min(1, { message: "must not be empty" })
    .max(maxLength, { message: `must be at most ${maxLength} characters` })
    .refine((text) => !CONTROL_CHARACTER.test(text), { message: "must not contain control characters (U+0000-U+001F, U+007F-U+009F)" })
    .refine((text) => text.isWellFormed(), { message: "must be well-formed Unicode (no lone surrogate)" });
}

export const MAX_LICENSE_KEY_LENGTH = 1024;
/** A license key as a request carries it: looked up, never stored, but bounded all the same. */
export const LicenseKey = StoredText(MAX_LICENSE_KEY_LENGTH);

/** A plain object (not null, not an array): what a parsed JSON or YAML document is expected to be at its top. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
