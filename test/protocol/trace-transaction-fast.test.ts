import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { z } from "zod";
import { parseRequest, RequestValidationError } from "../../src/http/validate.ts";
import { TransactionsRequest } from "../../src/protocol/local-api.ts";
import { IngestTracesRequest, MAX_REQUEST_TRANSACTIONS, TraceTransaction } from "../../src/protocol/trace-transaction.ts";
import { fastIngestTracesRequest, fastTraceTransaction, fastTransactionsRequest } from "../../src/protocol/trace-transaction-fast.ts";
import { traceTransaction, traceTransactions } from "../helpers/fixtures.ts";
import { ingestTracesBody, transaction, transactionsBody } from "./trace-transaction-arbitraries.ts";

// The zod-free billing fast path (src/protocol/trace-transaction-fast.ts) must accept exactly what the zod schemas
// accept and output exactly what they output (same keys in the same order, -0 kept); and through parseRequest, a
// route's answer (value or 422 detail) must be the one the schema alone gives.

const SEED = process.env.FC_SEED ?? "20261127";
const options = (numRuns: number): fc.Parameters<unknown> => ({ numRuns, ...(SEED === "random" ? {} : { seed: Number(SEED) }) });

/** Same value, deeply and strictly (-0 is not 0), and the same keys in the same order. */
function assertSame(actual: unknown, expected: unknown): void {
  assert.deepStrictEqual(actual, expected);
  assert.equal(JSON.stringify(actual), JSON.stringify(expected));
}

/** Asserts fast's verdict and value are zod's; counts the verdicts so a test can see both were exercised. */
function assertEquivalent(schema: z.ZodType, fast: (raw: unknown) => unknown, raw: unknown, seen: { accepted: number; refused: number }) {
  const expected = schema.safeParse(raw);
  const actual = fast(raw);
  if (!expected.success) {
    // assert.ok, not assert.equal: a failure carrying a 10,000-record value takes the test runner minutes to report.
    assert.ok(actual === undefined, `fast accepted what zod refuses (${expected.error.issues[0]?.message})`);
    seen.refused++;
  } else {
    assert.ok(actual !== undefined, "fast refused what zod accepts");
    assertSame(actual, expected.data);
    seen.accepted++;
  }
}

/** parseRequest's outcome: the value, or the 422 detail it throws. */
function outcome(run: () => unknown): unknown {
  try {
    return { value: run() };
  } catch (err) {
    if (!(err instanceof RequestValidationError)) throw err;
    return { detail: err.detail };
  }
}

const cases = [
  { name: "TraceTransaction", schema: TraceTransaction, fast: fastTraceTransaction, arb: transaction, runs: 6000 },
  { name: "TransactionsRequest", schema: TransactionsRequest, fast: fastTransactionsRequest, arb: transactionsBody, runs: 2500 },
  { name: "IngestTracesRequest", schema: IngestTracesRequest, fast: fastIngestTracesRequest, arb: ingestTracesBody, runs: 2500 },
];

describe("billing fast path: the same verdict and output as the zod schemas", () => {
  for (const { name, schema, fast, arb, runs } of cases) {
    test(`${name}: fast accepts iff zod accepts, with the same normalised value`, () => {
      const seen = { accepted: 0, refused: 0 };
      fc.assert(
        fc.property(arb, (raw) => assertEquivalent(schema, fast, raw, seen)),
        options(runs),
      );
      // Both verdicts in good measure (about 20% of records and 60% of bodies are valid): a generator that only made
      // bad (or only good) records would prove little.
      assert.ok(seen.accepted > runs / 10 && seen.refused > runs / 10, JSON.stringify(seen));
    });
  }

  for (const { name, schema, fast, arb } of cases.slice(1)) {
    test(`${name}: parseRequest answers the same value or the same 422 detail with the fast path`, () => {
      fc.assert(
        fc.property(arb, (raw) => {
          assert.deepStrictEqual(
            outcome(() => parseRequest(schema, raw, "body", fast as never)),
            outcome(() => parseRequest(schema, raw)),
          );
        }),
        options(1000),
      );
    });
  }

  test("lists at the size bounds: 10,000 taken, 10,001 refused, an empty list refused by /v1/transactions only", () => {
    const full = traceTransactions(MAX_REQUEST_TRANSACTIONS);
    const seen = { accepted: 0, refused: 0 };
    for (const list of [full, [...full, traceTransaction()], []]) {
      assertEquivalent(TransactionsRequest, fastTransactionsRequest, { trace_transactions: list }, seen);
      assertEquivalent(IngestTracesRequest, fastIngestTracesRequest, { license: "key", trace_transactions: list }, seen);
    }
    assert.deepEqual(seen, { accepted: 3, refused: 3 });
  });

  test("a bad record at the end of a full list refuses the whole list", () => {
    const list = [...traceTransactions(MAX_REQUEST_TRANSACTIONS - 1), traceTransaction({ trace_count: -1 })];
    assert.equal(fastTransactionsRequest({ trace_transactions: list }), undefined);
    assert.equal(TransactionsRequest.safeParse({ trace_transactions: list }).success, false);
  });

  test("ids are lower-cased and times canonical, as zod outputs them", () => {
    const raw = traceTransaction({
      id: "2D3C4B5A-6978-4ABC-8DEF-0123456789AB",
      start_insertion_time: "2026-11-01T12:30:00.5+02:30",
      end_insertion_time: "2026-11-01 10:00:00.500000z",
    });
    const parsed = fastTraceTransaction(raw);
    assert.equal(parsed?.id, "2d3c4b5a-6978-4abc-8def-0123456789ab");
    assert.equal(parsed?.start_insertion_time, "2026-11-01T10:00:00.500Z");
    assert.equal(parsed?.end_insertion_time, "2026-11-01T10:00:00.500Z");
    assertSame(parsed, TraceTransaction.parse(raw));
  });
});
