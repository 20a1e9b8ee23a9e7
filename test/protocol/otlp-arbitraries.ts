import fc from "fast-check";
import type { OtlpSignal } from "../../src/protocol/otlp.ts";

// fast-check arbitraries for the OTLP fast path's equivalence test: valid OTLP JSON parts and requests, mostly, with
// near-valid mutations mixed in at every level (wrong types, missing required fields, bad or upper-case hex,
// non-canonical and out-of-range 64-bit integers, both or neither of a oneof, unknown keys, nulls, deep nesting).

/** Marks a key to leave out of a generated object. */
const ABSENT = Symbol("absent");

/** Mostly `valid`, sometimes `invalid` (1 time in weight + 1). */
const mostly = (valid: fc.Arbitrary<unknown>, invalid: fc.Arbitrary<unknown>, weight = 30) =>
  fc.oneof({ arbitrary: valid, weight }, { arbitrary: invalid, weight: 1 });

export const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1.5, "", "x", "0", [], {}, [null], { a: 1 }),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 4 }),
);

/** Keys no OTLP shape here knows (some of them Object.prototype's names), and what they may hold. */
const unknownKey = fc.constantFrom(
  "extra",
  "x-unknown",
  "__proto__",
  "constructor",
  "valueOf",
  "0",
  "histogramX",
  "Name",
  "time_unix_nano",
);
const unknownValue = fc.oneof(junk, fc.jsonValue({ maxDepth: 3 }));

/** Own enumerable properties, as JSON.parse makes them (assigning "__proto__" would set the prototype instead). */
function withKey(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * An object of `shape`'s fields: each `required` key present 60 times in 61, the others half the time; sometimes
 * unknown keys added and the key order reversed (the output's order is the schema's whatever the input's).
 */
function rec(shape: Record<string, fc.Arbitrary<unknown>>, required: string[] = []): fc.Arbitrary<unknown> {
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [key, arb] of Object.entries(shape)) {
    fields[key] = required.includes(key)
      ? fc.oneof({ arbitrary: arb, weight: 60 }, { arbitrary: fc.constant(ABSENT), weight: 1 })
      : fc.oneof(arb, fc.constant(ABSENT));
  }
  const extras = fc.oneof({ arbitrary: fc.constant([]), weight: 6 }, fc.array(fc.tuple(unknownKey, unknownValue), { maxLength: 2 }));
  return fc.tuple(fc.record(fields), extras, fc.boolean()).map(([values, extra, reversed]) => {
    const entries = Object.entries(values).filter(([, v]) => v !== ABSENT);
    for (const [key, value] of extra) if (!(key in shape)) entries.push([key, value]);
    if (reversed) entries.reverse();
    const o: Record<string, unknown> = {};
    for (const [key, value] of entries) withKey(o, key, value);
    return o;
  });
}

const list = (item: fc.Arbitrary<unknown>, maxLength = 3) => mostly(fc.array(item, { maxLength }), junk, 40);

const B63 = 2n ** 63n;
const B64 = 2n ** 64n;
const padded = (zeros: number, negative: boolean, v: bigint) => `${negative ? "-" : ""}${"0".repeat(zeros)}${v}`;

/** Odd 64-bit integers: non-canonical, at or just past the range's ends, not integers, not numbers at all. */
const oddInt64: fc.Arbitrary<unknown> = fc.oneof(
  fc.tuple(fc.integer({ min: 1, max: 3 }), fc.boolean(), fc.bigInt({ min: 0n, max: B64 })).map(([z, n, v]) => padded(z, n, v)),
  fc.bigInt({ min: B64 - 3n, max: B64 + 3n }).map(String),
  fc.bigInt({ min: -B63 - 3n, max: -B63 + 3n }).map(String),
  fc.tuple(fc.integer({ min: 0, max: 2 }), fc.bigInt({ min: B63 - 2n, max: B63 + 2n })).map(([z, v]) => padded(z, true, v)),
  fc.bigInt({ min: -B63, max: B64 - 1n }).map(Number),
  fc.constantFrom("007", "-0", "-00", "00", "0", "-007", "", "-", "+1", "1.0", "1e3", "NaN", "Infinity", " 1", "1 ", "0x1F"),
  fc.constantFrom("\u0661\u0662", "1\n", "9".repeat(22), "18446744073709551615", "018446744073709551615", "-09223372036854775808"),
  fc.constantFrom(2 ** 63, 2 ** 64, -(2 ** 63), -(2 ** 63) - 4096, 1e19, 1.8e19, 1.9e19, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 0.5, -0),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.MAX_VALUE, Number.MIN_VALUE, 1e300),
  junk,
);

/** 64-bit integers as strings and numbers, mostly ordinary, sometimes odd. */
export const int64Like: fc.Arbitrary<unknown> = mostly(
  fc.oneof(fc.bigInt({ min: -B63, max: B64 - 1n }).map(String), fc.maxSafeInteger(), fc.integer({ min: -5, max: 1000 })),
  oddInt64,
  4,
);

/** Timestamps: mostly nanoseconds since the epoch as OTLP senders write them (strings, sometimes numbers), sometimes odd. */
export const unixNanoLike: fc.Arbitrary<unknown> = mostly(
  fc.oneof(
    { arbitrary: fc.bigInt({ min: 1_000_000_000_000_000_000n, max: 2_000_000_000_000_000_000n }).map(String), weight: 4 },
    fc.nat().map(String),
    fc.maxSafeInteger().map(Math.abs),
  ),
  fc.oneof(oddInt64, fc.bigInt({ min: -B63, max: -1n }).map(String), fc.integer({ max: -1 })),
  8,
);

const hexString = (length: number, chars: string) => fc.string({ unit: fc.constantFrom(...chars), minLength: length, maxLength: length });

/** Hex ids: lower-case, upper- or mixed-case (valid, lower-cased), a digit short or long, non-hex, empty, not a string. */
export function hexLike(digits: number): fc.Arbitrary<unknown> {
  return fc.oneof(
    { arbitrary: hexString(digits, "0123456789abcdef"), weight: 40 },
    { arbitrary: hexString(digits, "0123456789abcdefABCDEF"), weight: 10 },
    hexString(digits - 1, "0123456789abcdef"),
    hexString(digits + 1, "0123456789abcdef"),
    hexString(digits, "0123456789abcdefg"),
    hexString(digits, "0123456789abcdef\u00e9 "),
    fc.constantFrom("", "0"),
    junk,
  );
}

const base64Like = fc.oneof(
  { arbitrary: fc.uint8Array({ maxLength: 9 }).map((b) => Buffer.from(b).toString("base64")), weight: 8 },
  fc.uint8Array({ minLength: 1, maxLength: 9 }).map((b) => Buffer.from(b).toString("base64").replace(/=+$/, "")),
  fc.uint8Array({ minLength: 1, maxLength: 9 }).map((b) => Buffer.from(b).toString("base64url")),
  fc.string({ unit: fc.constantFrom(..."AB+/=-_ \n\u00e9"), maxLength: 8 }),
  fc.constantFrom("====", "A===", "AB=C", "AB==", "ABC=", "AB ==", "=AAA", "AAAA===="),
  junk,
);

const str = mostly(fc.string({ maxLength: 6 }), junk);
const bool = mostly(fc.boolean(), junk);
const double = mostly(fc.double(), junk);
/** A z.int() field: safe integers in [min, max] (and -0), and what is just past it or not an integer. */
const intIn = (min: number, max: number) =>
  mostly(
    fc.oneof(fc.integer({ min, max }), fc.constant(-0)),
    fc.oneof(fc.integer({ min: min - 2, max: Math.min(max, 2 ** 31) + 2 }), fc.constantFrom(0.5, 2 ** 53, -(2 ** 53), 1e300, "1"), junk),
  );
const count = intIn(0, Number.MAX_SAFE_INTEGER);

/** AnyValue and KeyValue, recursive; plus values nested 15 to 25 arrays deep, around the depth bound. */
const values = fc.letrec<{ anyValue: unknown; keyValue: unknown }>((tie) => ({
  anyValue: fc.oneof(
    { depthSize: "small", maxDepth: 4 },
    rec({ stringValue: str, intValue: int64Like }),
    rec({ boolValue: bool, doubleValue: double, bytesValue: base64Like }),
    rec({ arrayValue: rec({ values: list(tie("anyValue")) }) }),
    rec({ kvlistValue: rec({ values: list(tie("keyValue")) }), stringValue: str }),
  ),
  keyValue: mostly(rec({ key: str, value: tie("anyValue") }, ["key"]), junk, 60),
}));
const deepValue = fc.tuple(fc.integer({ min: 15, max: 25 }), fc.string({ maxLength: 3 })).map(([levels, leaf]) => {
  let value: unknown = { stringValue: leaf };
  for (let i = 0; i < levels; i++) value = { arrayValue: { values: [value] } };
  return value;
});
export const anyValue = fc.oneof({ arbitrary: values.anyValue, weight: 20 }, deepValue);
const keyValue = fc.oneof({ arbitrary: values.keyValue, weight: 30 }, rec({ key: str, value: deepValue }, ["key"]));
const attributes = list(keyValue);

export const resource = rec({ attributes, droppedAttributesCount: count });
export const scope = rec({ name: str, version: str, attributes, droppedAttributesCount: count });

// ---- metrics ----

const pointBase = rec({ attributes, startTimeUnixNano: unixNanoLike, timeUnixNano: unixNanoLike }, ["timeUnixNano"]);
/** One of asDouble or asInt mostly; both or neither sometimes. */
const pointValue = fc.oneof(
  { arbitrary: fc.record({ asDouble: double }), weight: 8 },
  { arbitrary: fc.record({ asInt: int64Like }), weight: 8 },
  fc.record({ asDouble: double, asInt: int64Like }),
  fc.constant({}),
);
const point = mostly(
  fc.tuple(pointBase, pointValue).map(([base, value]) => (base !== null && typeof base === "object" ? { ...base, ...value } : base)),
  junk,
  60,
);
const dataPoints = list(point, 4);
const gauge = rec({ dataPoints });
const sum = rec({ dataPoints, aggregationTemporality: intIn(0, 2), isMonotonic: bool });
const metricType = fc.oneof(
  { arbitrary: fc.record({ gauge }), weight: 8 },
  { arbitrary: fc.record({ sum }), weight: 8 },
  fc.record({ gauge, sum }),
  fc.constant({}),
  fc.record({ histogram: rec({ dataPoints }) }),
  fc.record({ exponentialHistogram: rec({ dataPoints }), gauge }),
  fc.record({ summary: junk }),
);
export const metric = mostly(
  fc
    .tuple(
      rec({ name: mostly(fc.string({ minLength: 1, maxLength: 6 }), fc.oneof(fc.constant(""), junk)), unit: str, description: str }, [
        "name",
      ]),
      metricType,
    )
    .map(([base, type]) => (base !== null && typeof base === "object" ? { ...base, ...type } : base)),
  junk,
  60,
);

// ---- traces ----

const event = rec({ timeUnixNano: unixNanoLike, name: str, attributes, droppedAttributesCount: count }, ["timeUnixNano"]);
const link = rec({ traceId: hexLike(32), spanId: hexLike(16), traceState: str, attributes, droppedAttributesCount: count }, [
  "traceId",
  "spanId",
]);
const status = mostly(rec({ message: str, code: intIn(0, 2) }), junk);
export const span = mostly(
  rec(
    {
      traceId: hexLike(32),
      spanId: hexLike(16),
      traceState: str,
      parentSpanId: fc.oneof(fc.constant(""), hexLike(16)),
      flags: count,
      name: str,
      kind: intIn(0, 5),
      startTimeUnixNano: unixNanoLike,
      endTimeUnixNano: unixNanoLike,
      attributes,
      droppedAttributesCount: count,
      events: list(event, 2),
      droppedEventsCount: count,
      links: list(link, 2),
      droppedLinksCount: count,
      status,
    },
    ["traceId", "spanId", "startTimeUnixNano", "endTimeUnixNano"],
  ),
  junk,
  60,
);

// ---- logs ----

export const logRecord = mostly(
  rec({
    timeUnixNano: unixNanoLike,
    observedTimeUnixNano: unixNanoLike,
    severityNumber: intIn(0, 24),
    severityText: str,
    body: anyValue,
    attributes,
    droppedAttributesCount: count,
    flags: count,
    traceId: fc.oneof(fc.constant(""), hexLike(32)),
    spanId: fc.oneof(fc.constant(""), hexLike(16)),
  }),
  junk,
  60,
);

// ---- requests ----

const fields = {
  metrics: ["resourceMetrics", "scopeMetrics", "metrics", metric],
  traces: ["resourceSpans", "scopeSpans", "spans", span],
  logs: ["resourceLogs", "scopeLogs", "logRecords", logRecord],
} as const;

/** A whole export request: resources of scopes of items (one to a few each, mostly), junk or null at any level now and then. */
export function exportRequest(signal: OtlpSignal): fc.Arbitrary<unknown> {
  const [resources, scopes, items, item] = fields[signal];
  const some = (entry: fc.Arbitrary<unknown>, maxLength: number) =>
    mostly(fc.array(entry, { minLength: 1, maxLength }), fc.oneof(fc.constant([]), fc.constant(null), junk), 20);
  const scopeEntry = mostly(
    rec({ scope: fc.oneof({ arbitrary: scope, weight: 6 }, fc.constant(null)), [items]: some(item, 6) }, [items]),
    junk,
    60,
  );
  const resourceEntry = mostly(
    rec({ resource: fc.oneof({ arbitrary: resource, weight: 6 }, fc.constant(null)), [scopes]: some(scopeEntry, 2) }, [scopes]),
    junk,
    60,
  );
  return mostly(rec({ [resources]: some(resourceEntry, 2) }, [resources]), junk, 20);
}
