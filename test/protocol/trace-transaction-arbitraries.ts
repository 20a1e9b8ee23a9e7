import fc from "fast-check";
import { MAX_INT32 } from "../../src/protocol/common.ts";
import { compareTimestamps, normaliseTimestamp } from "../../src/protocol/timestamp.ts";
import { TraceTransaction } from "../../src/protocol/trace-transaction.ts";

// fast-check arbitraries for the billing fast path's equivalence test (trace-transaction-fast.test.ts): valid trace
// transactions and request bodies, mostly, with near-valid mutations of every field mixed in.

/** Marks a key to leave out of a generated object. */
const ABSENT = Symbol("absent");

/** Mostly `valid`, sometimes `invalid` (1 time in weight + 1). */
const mostly = (valid: fc.Arbitrary<unknown>, invalid: fc.Arbitrary<unknown>, weight = 30) =>
  fc.oneof({ arbitrary: valid, weight }, { arbitrary: invalid, weight: 1 });

const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, undefined, true, false, 0, -1, 1.5, "", "x", "0", [], {}, [null], { a: 1 }),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 4 }),
);

/** Own enumerable properties, as JSON.parse makes them (assigning "__proto__" would set the prototype instead). */
function withKey(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

const unknownKey = fc.constantFrom("extra", "__proto__", "constructor", "toString", "ID", "traceCount", "0");

/** An object of `shape`'s fields, each sometimes missing; sometimes unknown keys added and the key order shuffled. */
function rec(shape: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [key, arb] of Object.entries(shape))
    fields[key] = fc.oneof({ arbitrary: arb, weight: 80 }, { arbitrary: fc.constant(ABSENT), weight: 1 });
  const extras = fc.oneof(
    { arbitrary: fc.constant([]), weight: 6 },
    fc.array(fc.tuple(unknownKey, fc.jsonValue({ maxDepth: 2 })), { maxLength: 2 }),
  );
  return fc.tuple(fc.record(fields), extras, fc.boolean()).chain(([values, extra, shuffled]) => {
    const entries: [string, unknown][] = Object.entries(values).filter(([, v]) => v !== ABSENT);
    for (const [key, value] of extra) if (!(key in shape)) entries.push([key, value]);
    const ordered = shuffled ? fc.shuffledSubarray(entries, { minLength: entries.length }) : fc.constant(entries);
    return ordered.map((list) => {
      const o: Record<string, unknown> = {};
      for (const [key, value] of list) withKey(o, key, value);
      return o;
    });
  });
}

const hex = (length: number, chars = "0123456789abcdef") =>
  fc.string({ unit: fc.constantFrom(...chars), minLength: length, maxLength: length });

/** UUIDs of every version and variant digit (zod takes versions 1-8, variants 8-b), lower, upper or mixed case. */
const uuidShaped = fc
  .tuple(
    hex(8),
    hex(4),
    fc.constantFrom(..."0123456789abcdefABCDEF"),
    hex(3),
    fc.constantFrom(..."0123456789abcdefABCDEF"),
    hex(3),
    hex(12),
  )
  .map(([a, b, version, c, variant, d, e]) => `${a}-${b}-${version}${c}-${variant}${d}-${e}`)
  .chain((id) =>
    fc.constantFrom(
      id,
      id.toUpperCase(),
      id.replace(/[a-f]/, (ch) => ch.toUpperCase()),
    ),
  );

export const uuidLike: fc.Arbitrary<unknown> = mostly(
  fc.oneof({ arbitrary: fc.uuid({ version: [1, 2, 3, 4, 5, 6, 7, 8] }), weight: 5 }, uuidShaped),
  fc.oneof(
    fc.constantFrom(
      "00000000-0000-0000-0000-000000000000",
      "ffffffff-ffff-ffff-ffff-ffffffffffff",
      "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
      "ffffffff-ffff-ffff-ffff-fffffffffffF",
      "{2d3c4b5a-6978-4abc-8def-0123456789ab}",
      "2d3c4b5a69784abc8def0123456789ab",
      "2d3c4b5a-6978-4abc-8def-0123456789ab\n",
      " 2d3c4b5a-6978-4abc-8def-0123456789ab",
      "2d3c4b5a-6978-4abc-8def-0123456789a",
      "2d3c4b5a-6978-4abc-8def-0123456789abc",
      "2d3c4b5a_6978-4abc-8def-0123456789ab",
      "2d3c4b5a-6978-4abc-8def-0123456789ag",
      "2d3c4b5a-6978-4abc-8déf-0123456789ab",
    ),
    fc.uuid().map((id) => id.replace(/-/g, "")),
    junk,
  ),
  40,
);

const MAX_INT = MAX_INT32;
export const countLike: fc.Arbitrary<unknown> = mostly(
  fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: MAX_INT })),
  fc.constantFrom(
    -0,
    -1,
    MAX_INT,
    MAX_INT + 1,
    2 ** 32,
    2 ** 53,
    2 ** 53 + 2,
    1.5,
    0.1,
    1e-300,
    Number.NaN,
    Infinity,
    -Infinity,
    "7",
    "0",
    7n,
    null,
  ),
  25,
);

const pad = (n: number, width: number) => String(n).padStart(width, "0");

/** A well-formed time of a random instant as a sender at a random offset writes it: T/t/space, Z/z/±hh:mm, fractions of 1-9 digits. */
const instantText = fc
  .tuple(
    fc.oneof(
      { arbitrary: fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }), weight: 4 },
      fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }), // 0000-01-01 to 9999-12-31
    ),
    fc.oneof({ arbitrary: fc.constant(0), weight: 3 }, fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 })),
    fc.constantFrom("T", "T", "t", " "),
    fc.option(fc.string({ unit: fc.constantFrom(..."0123456789000"), minLength: 1, maxLength: 9 }), { nil: undefined }),
    fc.constantFrom("Z", "z", "+00:00", "-00:00", "offset"),
  )
  .map(([ms, offset, sep, fraction, zone]) => {
    const usesOffset = zone === "offset";
    const local = new Date(ms + (usesOffset ? offset : 0) * 60_000);
    const date = `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1, 2)}-${pad(local.getUTCDate(), 2)}`;
    const time = `${pad(local.getUTCHours(), 2)}:${pad(local.getUTCMinutes(), 2)}:${pad(local.getUTCSeconds(), 2)}`;
    const abs = Math.abs(offset);
    const zoneText = usesOffset ? `${offset < 0 ? "-" : "+"}${pad(Math.floor(abs / 60), 2)}:${pad(abs % 60, 2)}` : zone;
    return `${date}${sep}${time}${fraction === undefined ? "" : `.${fraction}`}${zoneText}`;
  });

/** Times made of parts near and past their bounds: Feb 29 in leap and common years, day 31 of short months, hour 24, offset 24:00. */
const partsText = fc
  .tuple(
    fc.constantFrom(0, 1, 1900, 1970, 2000, 2023, 2024, 2100, 9999),
    fc.integer({ min: 0, max: 13 }),
    fc.oneof(fc.integer({ min: 27, max: 32 }), fc.integer({ min: 0, max: 32 })),
    fc.integer({ min: 0, max: 24 }),
    fc.integer({ min: 0, max: 60 }),
    fc.integer({ min: 0, max: 60 }),
    fc.constantFrom("", ".", ".5", ".123", ".1234567890123", ".12a"),
    fc.constantFrom("Z", "", "+00:00", "+05:30", "-23:59", "+24:00", "-00:60", "+0000", "+00", "+00:00:00", "Z ", "UTC", "+05:30Z"),
    fc.constantFrom("T", "t", " ", "_"),
  )
  .map(
    ([y, mo, d, h, mi, s, fraction, zone, sep]) =>
      `${pad(y, 4)}-${pad(mo, 2)}-${pad(d, 2)}${sep}${pad(h, 2)}:${pad(mi, 2)}:${pad(s, 2)}${fraction}${zone}`,
  );

export const timestampLike: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: instantText, weight: 60 },
  { arbitrary: partsText, weight: 4 },
  fc.constantFrom("2026-11-01T10:00:00.123456789012+00:00", "2026-11-01", "10:00:00Z", "2026-11-01T10:00Z", "２０２６-11-01T10:00:00Z"),
  junk,
);

const canonical = (t: unknown) => (typeof t === "string" ? normaliseTimestamp(t) : undefined);

/** Two times, mostly in order (end not before start) so that most records are valid; now and then reversed. */
export const timePair = fc.tuple(timestampLike, timestampLike, fc.integer({ min: 0, max: 19 })).map(([a, b, roll]) => {
  const [ca, cb] = [canonical(a), canonical(b)];
  const inOrder = !ca?.ok || !cb?.ok || compareTimestamps(cb.value, ca.value) >= 0;
  return inOrder === roll > 0 ? [a, b] : [b, a];
});

const anyUnit = fc.oneof(
  { arbitrary: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz_-"), weight: 20 },
  fc.constantFrom(
    "\u0000",
    "\t",
    "\n",
    "\u001f",
    "\u007f",
    "\u0080",
    "\u009f",
    "\u00a0",
    "é",
    "😀",
    "\ud800",
    "\udfff",
    "\u200b",
    "\ufeff",
  ),
);

export const labelLike = (maxLength: number): fc.Arbitrary<unknown> =>
  mostly(
    fc.oneof(
      { arbitrary: fc.constantFrom("completed", "traces", "pending", "é😀", "\u00a0"), weight: 8 },
      fc.string({ unit: anyUnit, minLength: 0, maxLength: 12 }),
    ),
    fc.oneof(
      fc.constantFrom(maxLength - 1, maxLength, maxLength + 1).chain((n) => fc.constantFrom("x".repeat(n), `${"x".repeat(n - 2)}😀`)),
      junk,
    ),
    20,
  );

export const transaction: fc.Arbitrary<unknown> = mostly(
  fc.tuple(timePair, timePair).chain(([[sIns, eIns], [sInt, eInt]]) =>
    rec({
      id: uuidLike,
      tenant_id: uuidLike,
      session_id: uuidLike,
      trace_count: countLike,
      start_insertion_time: fc.constant(sIns),
      end_insertion_time: fc.constant(eIns),
      start_interval_time: fc.constant(sInt),
      end_interval_time: fc.constant(eInt),
      status: labelLike(128),
      num_failed_send_attempts: countLike,
      transaction_type: labelLike(128),
      organization_id: uuidLike,
    }),
  ),
  junk,
  60,
);

/** Transactions the schema takes (found by asking it): a list of them is valid, so that many lists are. */
const validTransaction = transaction.filter((raw) => TraceTransaction.safeParse(raw).success);

/** A request envelope's list: a few transactions (mostly valid ones, so a whole list is often valid), or not a list. */
export const transactionList: fc.Arbitrary<unknown> = mostly(
  fc.array(fc.oneof({ arbitrary: validTransaction, weight: 12 }, transaction), { maxLength: 3 }),
  junk,
  20,
);

export const transactionsBody = mostly(rec({ trace_transactions: transactionList }), junk, 30);
export const ingestTracesBody = mostly(rec({ license: labelLike(1024), trace_transactions: transactionList }), junk, 30);
