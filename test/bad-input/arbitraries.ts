import fc from "fast-check";
import type { TraceTransaction } from "../../src/protocol/trace-transaction.ts";

// fast-check arbitraries for the bad-input suite: valid trace transactions, and mutations of them that the
// wire schema must refuse, each knowing which field it broke, so a property can check the answer's `loc`.

/**
 * Runs per property. The seed is fixed so CI sees the same cases every run; `FC_SEED=<n>` replays a failure
 * (fast-check prints seed and path), `FC_SEED=random` explores new cases.
 */
const FIXED_SEED = 20261123;
export const fcOptions = (numRuns: number): fc.Parameters<unknown> => {
  const seed = process.env.FC_SEED ?? String(FIXED_SEED);
  return { numRuns, ...(seed === "random" ? {} : { seed: Number(seed) }) };
};

const isoUtc = fc
  .date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2099-12-31T23:59:59Z"), noInvalidDate: true })
  .map((d) => d.toISOString());
const interval = fc.tuple(isoUtc, isoUtc).map(([a, b]) => (a <= b ? [a, b] : [b, a]));

export const validTransaction: fc.Arbitrary<TraceTransaction> = fc
  .record({
    id: fc.uuid(),
    tenant_id: fc.uuid(),
    session_id: fc.uuid(),
    trace_count: fc.nat(),
    insertion: interval,
    intervalTimes: interval,
    status: fc.string({ minLength: 1 }),
    num_failed_send_attempts: fc.nat(),
    transaction_type: fc.string({ minLength: 1 }),
    organization_id: fc.uuid(),
  })
  .map(({ insertion, intervalTimes, ...t }) => ({
    ...t,
    start_insertion_time: insertion[0]!,
    end_insertion_time: insertion[1]!,
    start_interval_time: intervalTimes[0]!,
    end_interval_time: intervalTimes[1]!,
  }));

const uuidFields = ["id", "tenant_id", "session_id", "organization_id"] as const;
const timeFields = ["start_insertion_time", "end_insertion_time", "start_interval_time", "end_interval_time"] as const;
const countFields = ["trace_count", "num_failed_send_attempts"] as const;
const textFields = ["status", "transaction_type"] as const;
export const transactionFields = [...uuidFields, ...timeFields, ...countFields, ...textFields];

const notAString = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.jsonValue(), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 3 }),
);
const notACount = fc.oneof(
  fc.string(),
  fc.boolean(),
  fc.constant(null),
  fc.integer({ max: -1 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)),
  fc.array(fc.nat(), { maxLength: 2 }),
  fc.integer({ min: 2 ** 31, max: Number.MAX_SAFE_INTEGER }), // past what a PostgreSQL integer holds
);
/** Text no stored column takes: a control character somewhere (NUL included), or over 128 characters. */
const notStorableText = fc.oneof(
  fc
    .tuple(
      fc.string({ maxLength: 5 }),
      fc.integer({ min: 0, max: 0x9f }).filter((c) => c < 0x20 || c >= 0x7f),
      fc.string({ maxLength: 5 }),
    )
    .map(([before, code, after]) => `${before}${String.fromCharCode(code)}${after}`),
  fc.string({ minLength: 129, maxLength: 200 }),
);
/** Strings that are neither a UUID nor an ISO 8601 UTC timestamp (a letter no UUID or timestamp starts with). */
const notAFormat = fc.string().map((s) => `q${s}`);

/** A value of the wrong type or format for one field of a trace transaction. */
export const wrongValue = fc.constantFrom(...transactionFields).chain((field) => {
  const value: fc.Arbitrary<unknown> = (countFields as readonly string[]).includes(field)
    ? notACount
    : (textFields as readonly string[]).includes(field)
      ? fc.oneof(notAString, fc.constant(""), notStorableText)
      : fc.oneof(notAString, notAFormat);
  return value.map((v) => ({ field, value: v }));
});

export interface BadBatch {
  /** The batch, one transaction broken. */
  transactions: unknown[];
  /** The path (below the list) the answer must name, when the mutation broke one field. */
  loc?: (string | number)[];
  description: string;
}

/** A batch of 1..4 valid transactions with one of them broken: a field dropped or given a wrong value, maybe
 * with unknown fields added as well (which alone would be ignored). */
export const badBatch: fc.Arbitrary<BadBatch> = fc
  .record({
    batch: fc.array(validTransaction, { minLength: 1, maxLength: 4 }),
    at: fc.nat(),
    change: fc.oneof(
      fc.constantFrom(...transactionFields).map((field) => ({ field, drop: true as const, value: undefined })),
      wrongValue.map((w) => ({ ...w, drop: false as const })),
    ),
    extra: fc.option(
      fc.dictionary(
        fc.string().map((k) => `x_${k}`),
        fc.jsonValue({ maxDepth: 2 }),
        { minKeys: 1, maxKeys: 3 },
      ),
      { nil: undefined },
    ),
  })
  .map(({ batch, at, change, extra }) => {
    const index = at % batch.length;
    const broken: Record<string, unknown> = { ...batch[index], ...extra };
    if (change.drop) delete broken[change.field];
    else broken[change.field] = change.value;
    const transactions: unknown[] = [...batch];
    transactions[index] = broken;
    const what = change.drop ? `dropped ${change.field}` : `${change.field} = ${JSON.stringify(change.value)}`;
    return { transactions, loc: [index, change.field], description: `${what}${extra ? " (+ unknown fields)" : ""}` };
  });

/** Raw bodies that are no request at all: any JSON value, or any text. */
export const junkBody: fc.Arbitrary<string> = fc.oneof(
  fc.jsonValue().map((v) => JSON.stringify(v) ?? "null"),
  fc.string({ unit: "binary" }),
  fc.string(),
);

/** Sets (or deletes, with `undefined`) the value at one path of a copy of `value`; paths are picked by index. */
export function mutateAt(value: unknown, pick: number, replacement: unknown): unknown {
  const copy = structuredClone(value);
  const paths: { parent: Record<string | number, unknown>; key: string | number }[] = [];
  const stack: unknown[] = [copy];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== "object") continue;
    for (const [key, child] of Object.entries(node)) {
      paths.push({ parent: node as Record<string, unknown>, key: Array.isArray(node) ? Number(key) : key });
      stack.push(child);
    }
  }
  if (paths.length === 0) return replacement;
  const { parent, key } = paths[pick % paths.length]!;
  if (replacement === undefined && !Array.isArray(parent)) delete parent[key];
  else parent[key] = replacement;
  return copy;
}
