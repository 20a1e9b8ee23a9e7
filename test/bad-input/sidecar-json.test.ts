import assert from "node:assert/strict";
import { deflateSync, gzipSync } from "node:zlib";
import { after, afterEach, before, beforeEach, describe, test } from "node:test";
import { MAX_VALIDATION_ERRORS } from "../../src/protocol/validation-error.ts";
import { traceTransaction, traceTransactions, usageMeasures } from "../helpers/fixtures.ts";
import { postJson } from "../helpers/processes.ts";
import {
  assertError,
  assertUp,
  assertValidation,
  deepArrays,
  deepObjects,
  malformedJson,
  send,
  sendJson,
  sendTruncated,
  sidecarRecordBody,
  sidecarStored,
  truncatedGzip,
  wrongMediaTypes,
  wrongTopLevel,
} from "./harness.ts";
import { BODY_LIMIT, startPair, stopPair, type Pair } from "./setup.ts";

// The sidecar's JSON routes (docs/sidecar.md, local API): a bad body is 422 HTTPValidationError with the field path,
// 413 over limits.bodyLimit, 415 for another media type or any Content-Encoding; and then nothing of it is kept.

const routes = {
  "/v1/transactions": () => ({ trace_transactions: traceTransactions(2) }),
  "/v1/usage/measures": () => usageMeasures(3),
};

describe("sidecar local API: bad input to the JSON routes", () => {
  let pair: Pair;
  let url: (path: string) => string;
  let storedBefore: ReturnType<typeof sidecarStored>;

  before(async () => {
    pair = await startPair();
    url = (path) => `${pair.agent.url}${path}`;
  });
  after(() => stopPair(pair));
  beforeEach(() => {
    storedBefore = sidecarStored(pair.agentFixture.dataDir);
  });
  /** Every test sends only refused requests unless it says otherwise: nothing new may be on disk after it. */
  const nothingStored = () => assert.deepEqual(sidecarStored(pair.agentFixture.dataDir), storedBefore, "a refused request stores nothing");
  afterEach(async () => assertUp(pair.agent.url));

  test("malformed JSON is 422 json_invalid at the body; an empty body is 422 missing", async (t) => {
    for (const path of Object.keys(routes)) {
      for (const [name, body] of Object.entries(malformedJson)) {
        await t.test(`${path}: ${name}`, async () => {
          assertValidation(await sendJson(url(path), body), ["body"], "json_invalid");
        });
      }
      assertValidation(await sendJson(url(path), ""), ["body"], "missing");
    }
    nothingStored();
  });

  test("JSON of the wrong type is 422 naming the field, index and rule", async () => {
    for (const path of Object.keys(routes)) {
      for (const body of Object.values(wrongTopLevel)) assertValidation(await sendJson(url(path), body), ["body"], "invalid_type");
    }
    const cases: [Record<string, unknown>, string, string][] = [
      [{ id: "not-a-uuid" }, "id", "invalid_format"],
      [{ tenant_id: 42 }, "tenant_id", "invalid_type"],
      [{ organization_id: null }, "organization_id", "invalid_type"],
      [{ trace_count: "7" }, "trace_count", "invalid_type"],
      [{ trace_count: 1.5 }, "trace_count", "invalid_type"],
      [{ num_failed_send_attempts: -1 }, "num_failed_send_attempts", "too_small"],
      [{ start_interval_time: "2026-11-01 10:00" }, "start_interval_time", "invalid_format"],
      [{ end_insertion_time: "2026-11-01T12:00:00" }, "end_insertion_time", "invalid_format"], // no offset: ambiguous
      [{ end_insertion_time: "2026-11-01T25:00:00Z" }, "end_insertion_time", "invalid_format"], // no such hour
      [{ end_interval_time: "2026-11-01T09:00:00Z" }, "end_interval_time", "custom"],
      [{ status: undefined }, "status", "missing"],
      [{ transaction_type: "" }, "transaction_type", "too_small"],
      [{ status: { nested: true } }, "status", "invalid_type"],
    ];
    for (const [patch, field, type] of cases) {
      const batch: Record<string, unknown>[] = traceTransactions(3);
      batch[1] = { ...batch[1], ...patch };
      assertValidation(
        await postJson(url("/v1/transactions"), { trace_transactions: batch }),
        ["body", "trace_transactions", 1, field],
        type,
      );
    }
    assertValidation(await postJson(url("/v1/transactions"), { trace_transactions: {} }), ["body", "trace_transactions"], "invalid_type");
    assertValidation(await postJson(url("/v1/transactions"), { trace_transactions: [] }), ["body", "trace_transactions"], "too_small");
    assertValidation(
      await postJson(url("/v1/transactions"), { trace_transactions: [null] }),
      ["body", "trace_transactions", 0],
      "invalid_type",
    );
    for (const [value, type] of [
      ["1", "invalid_type"],
      [1.5, "invalid_type"],
      [-1, "too_small"],
      [null, "invalid_type"],
      [true, "invalid_type"],
    ] as const) {
      assertValidation(await postJson(url("/v1/usage/measures"), { ...usageMeasures(), prompts: value }), ["body", "prompts"], type);
    }
    const { users: _, ...withoutUsers } = usageMeasures();
    assertValidation(await postJson(url("/v1/usage/measures"), withoutUsers), ["body", "users"], "missing");
    nothingStored();
  });

  test("unknown fields: a usage measure is refused (extra_forbidden); on transactions they are ignored, never stored", async () => {
    assertValidation(
      await postJson(url("/v1/usage/measures"), { ...usageMeasures(), customer_email: 1 }),
      ["body", "customer_email"],
      "extra_forbidden",
    );
    nothingStored();
    // A trace transaction's unknown fields are dropped at intake, so they never leave (docs/PROTOCOL.md).
    const transaction = { ...traceTransaction(), customer_email: "alice@example.com", nested: { deep: [1] } };
    const accepted = await postJson(url("/v1/transactions"), { trace_transactions: [transaction], also_unknown: true });
    assert.deepEqual([accepted.status, accepted.body], [202, { accepted: 1, duplicates: 0 }]);
    const stored = sidecarRecordBody(pair.agentFixture.dataDir, transaction.id);
    assert.deepEqual(Object.keys(stored ?? {}).sort(), Object.keys(traceTransaction()).sort(), "only the documented fields are kept");
  });

  test("huge bodies: over limits.bodyLimit is 413; many bad items answer with at most 100 problems", async () => {
    for (const path of Object.keys(routes)) {
      const huge = JSON.stringify({ trace_transactions: [], padding: "x".repeat(BODY_LIMIT) });
      assertError(await sendJson(url(path), huge), 413, "EGRESS_ERR_BODY_TOO_LARGE");
    }
    const empties = (n: number) => `{"trace_transactions":[${Array(n).fill("{}").join(",")}]}`;
    const tooMany = assertValidation(await sendJson(url("/v1/transactions"), empties(10_001)), ["body", "trace_transactions"], "too_big");
    assert.equal(tooMany.length, 1, "an oversized list is refused as a whole, before its items");
    const capped = assertValidation(
      await sendJson(url("/v1/transactions"), empties(10_000)),
      ["body", "trace_transactions", 0, "id"],
      "missing",
    );
    assert.equal(capped.length, MAX_VALIDATION_ERRORS, "120,000 problems, the first 100 listed");
    const extraKeys = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i]));
    const manyUnknown = assertValidation(
      await postJson(url("/v1/usage/measures"), { ...usageMeasures(), ...extraKeys }),
      ["body", "k0"],
      "extra_forbidden",
    );
    assert.equal(manyUnknown.length, MAX_VALIDATION_ERRORS);
    nothingStored();
  });

  test("deep nesting: 100,000 levels of arrays or objects, at the top or in a field, is 422 and no stack overflow", async () => {
    for (const path of Object.keys(routes)) {
      for (const deep of [deepArrays(100_000), deepObjects(100_000), `{"trace_transactions":[${deepArrays(100_000)}]}`, deepArrays(65)]) {
        assertValidation(await sendJson(url(path), deep), ["body"], "json_invalid");
      }
    }
    const wrapped = { ...traceTransaction(), status: JSON.parse(deepArrays(64)) }; // 66 levels in all
    assertValidation(await postJson(url("/v1/transactions"), { trace_transactions: [wrapped] }), ["body"], "json_invalid");
    nothingStored();
  });

  test("wrong media types are 415; any Content-Encoding (valid or truncated gzip, deflate, br) is 415", async (t) => {
    for (const [path, good] of Object.entries(routes)) {
      for (const [name, { headers, body }] of Object.entries(wrongMediaTypes)) {
        await t.test(`${path}: ${name}`, async () => assertError(await send(url(path), body, headers), 415, "EGRESS_ERR_MEDIA_TYPE"));
      }
      assertError(await send(url(path), JSON.stringify(good()), { "content-type": "application/x-protobuf" }), 415);
      const json = JSON.stringify(good());
      const encoded: [string, string | Uint8Array][] = [
        ["gzip", gzipSync(json)],
        ["gzip", truncatedGzip(good())],
        ["gzip", json], // plain JSON labelled compressed: not read as if it were plain
        ["deflate", deflateSync(json)],
        ["br", json],
      ];
      for (const [encoding, body] of encoded) {
        assertError(await sendJson(url(path), body, { "content-encoding": encoding }), 415, "EGRESS_ERR_CONTENT_ENCODING");
      }
    }
    nothingStored();
  });

  test("a body cut off mid-stream is refused with 400 and stores nothing", async () => {
    const body = JSON.stringify({ trace_transactions: traceTransactions(20) });
    assert.equal(await sendTruncated(url("/v1/transactions"), body), 400);
    assert.equal(await sendTruncated(url("/v1/usage/measures"), JSON.stringify(usageMeasures(9))), 400);
    nothingStored();
  });

  test("after all of it, good input is still accepted and stored", async () => {
    const batch = traceTransactions(3);
    const accepted = await postJson(url("/v1/transactions"), { trace_transactions: batch });
    assert.deepEqual([accepted.status, accepted.body], [202, { accepted: 3, duplicates: 0 }]);
    const measures = await postJson(url("/v1/usage/measures"), usageMeasures(7));
    assert.deepEqual([measures.status, measures.body], [202, { stored: true }]);
    const stored = sidecarStored(pair.agentFixture.dataDir);
    assert.equal(stored.inserted, storedBefore.inserted + 3);
    assert.deepEqual(JSON.parse(stored.pushedMeasures!), usageMeasures(7));
    assert.ok(batch.every((t) => sidecarRecordBody(pair.agentFixture.dataDir, t.id)?.id === t.id));
  });
});
