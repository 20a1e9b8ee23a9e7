import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import type { z } from "zod";
import { TransactionsRequest } from "../../src/protocol/local-api.ts";
import { IngestTracesRequest } from "../../src/protocol/trace-transaction.ts";
import { HTTPValidationError } from "../../src/protocol/validation-error.ts";
import { traceTransactions } from "../helpers/fixtures.ts";
import { storedTransactions } from "../helpers/beacon-db.ts";
import { postJson, waitFor } from "../helpers/processes.ts";
import { badBatch, fcOptions, junkBody, mutateAt, validTransaction } from "./arbitraries.ts";
import { assertUp, beaconStored, sendJson, sidecarStored } from "./harness.ts";
import { startPair, stopPair, type Pair } from "./setup.ts";

// Fuzzing the two billing intakes as running processes: a few hundred generated bad bodies each (a broken
// transaction, any JSON, any text, a valid request with any value put anywhere). Every answer must be a 422
// (never a 5xx, never a 2xx), name the broken field when one was broken, and leave nothing stored.

interface Case {
  body: string;
  /** The `loc` the answer must hold, for a batch with one known field broken. */
  loc?: (string | number)[];
}

/** Bad bodies for a billing route whose request wraps the batch with `wrap`. */
function badBodies(wrap: (transactions: unknown[]) => Record<string, unknown>, schema: z.ZodType): fc.Arbitrary<Case> {
  const broken = badBatch.map((bad) => ({
    body: JSON.stringify(wrap(bad.transactions)),
    loc: ["body", "trace_transactions", ...bad.loc!],
  }));
  const junk = junkBody.map((body) => ({ body }));
  const mutated = fc
    .tuple(
      fc.array(validTransaction, { minLength: 1, maxLength: 3 }),
      fc.nat(),
      fc.option(fc.jsonValue({ maxDepth: 3 }), { nil: undefined }),
    )
    .map(([batch, pick, value]) => ({ body: JSON.stringify(mutateAt(wrap(batch), pick, value)) }));
  return fc.oneof(broken, junk, mutated).filter(({ body }) => {
    try {
      return !schema.safeParse(JSON.parse(body)).success; // a body that happens to be valid is no bad input
    } catch {
      return true; // not JSON at all
    }
  });
}

describe("fuzzing the billing intakes of the running sidecar and beacon", () => {
  let pair: Pair;

  before(async () => {
    pair = await startPair();
  });
  after(() => stopPair(pair));

  const property = (url: () => string, stored: () => unknown, cases: fc.Arbitrary<Case>) =>
    fc.asyncProperty(cases, async ({ body, loc }) => {
      const before = stored();
      const answer = await sendJson(url(), body);
      assert.equal(answer.status, 422, `answer ${answer.status} ${answer.bytes.toString().slice(0, 300)}`);
      const { detail } = HTTPValidationError.parse(answer.json);
      // The JSON reader's prototype-poisoning guard refuses a body with a `__proto__` (or `constructor.prototype`) key as a whole.
      const refusedAsPoisoning =
        /"(?:__proto__|constructor)"\s*:/.test(body) &&
        JSON.stringify(detail.map((d) => [d.loc, d.type])) === '[[["body"],"json_invalid"]]';
      if (loc && !refusedAsPoisoning)
        assert.ok(
          detail.some((d) => JSON.stringify(d.loc) === JSON.stringify(loc)),
          `no entry at ${JSON.stringify(loc)}: ${JSON.stringify(detail)}`,
        );
      assert.deepEqual(stored(), before, "a refused body stored nothing");
    });

  test("POST /v1/transactions (sidecar): 300 bad bodies, each a 422, nothing kept", async () => {
    const cases = badBodies((transactions) => ({ trace_transactions: transactions }), TransactionsRequest);
    await fc.assert(
      property(
        () => `${pair.agent.url}/v1/transactions`,
        () => sidecarStored(pair.agentFixture.dataDir),
        cases,
      ),
      fcOptions(300),
    );
    await assertUp(pair.agent.url);
    const batch = traceTransactions(2);
    const good = await postJson(`${pair.agent.url}/v1/transactions`, { trace_transactions: batch });
    assert.deepEqual([good.status, good.body], [202, { accepted: 2, duplicates: 0 }]);
    // ...and delivery still works: the good batch reaches the beacon (before the beacon's own count is watched).
    await waitFor(async () => batch.every((t) => storedTransactions(pair.beaconFixture.dataDir).has(t.id)), 15_000, "delivery");
  });

  test("POST /v1/beacon/ingest-traces (beacon): 300 bad bodies, each a 422, nothing stored", async () => {
    const cases = badBodies((transactions) => ({ license: pair.license.key, trace_transactions: transactions }), IngestTracesRequest);
    await fc.assert(
      property(
        () => `${pair.beacon.url}/v1/beacon/ingest-traces`,
        () => beaconStored(pair.beaconFixture.dataDir).transactions,
        cases,
      ),
      fcOptions(300),
    );
    await assertUp(pair.beacon.url);
    const good = await postJson(`${pair.beacon.url}/v1/beacon/ingest-traces`, {
      license: pair.license.key,
      trace_transactions: traceTransactions(2),
    });
    assert.deepEqual([good.status, good.body], [200, { inserted_count: 2 }]);
  });
});
