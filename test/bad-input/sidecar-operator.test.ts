import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { traceTransactions } from "../helpers/fixtures.ts";
import { getJson, postJson } from "../helpers/processes.ts";
import { assertError, assertUp, assertValidation, deepArrays, send, sendJson, sidecarStored } from "./harness.ts";
import { BODY_LIMIT, startPair, stopPair, type Pair } from "./setup.ts";

// The operator routes (GET /v1/status, /v1/audit, /metrics, /healthz, /readyz) and unknown routes: a bad query
// is 422 naming the parameter (docs/sidecar.md: /v1/audit), another method or path is 404 whatever the body, and none of
// it changes what the sidecar has stored.

describe("sidecar operator routes and unknown routes: bad input", () => {
  let pair: Pair;
  let url: (path: string) => string;

  before(async () => {
    pair = await startPair();
    url = (path) => `${pair.agent.url}${path}`;
  });
  after(() => stopPair(pair));

  test("GET /v1/audit: each bad query parameter is 422 naming it, with the rule it broke", async () => {
    const cases: [string, string, string][] = [
      ["limit=abc", "limit", "invalid_format"],
      ["limit=1.5", "limit", "invalid_format"],
      ["limit=0x10", "limit", "invalid_format"],
      ["limit=1e3", "limit", "invalid_format"],
      ["limit=%205", "limit", "invalid_format"],
      ["limit=", "limit", "invalid_format"],
      ["limit=0", "limit", "too_small"],
      ["limit=1001", "limit", "too_big"],
      ["limit=1&limit=2", "limit", "invalid_type"],
      ["after=-1", "after", "invalid_format"],
      ["since=yesterday", "since", "invalid_format"],
      ["since=2026-13-45T99:00:00Z", "since", "invalid_format"],
      ["stream=bogus", "stream", "invalid_value"],
      ["tenant=acme", "tenant", "extra_forbidden"],
    ];
    for (const [query, param, type] of cases) {
      const response = await fetch(url(`/v1/audit?${query}`));
      assertValidation({ status: response.status, json: await response.json() }, ["query", param], type);
    }
    const all = await fetch(url("/v1/audit?limit=0&after=x&stream=1&since=no"));
    const detail = assertValidation({ status: all.status, json: await all.json() }, ["query", "limit"]);
    assert.deepEqual(detail.map((d) => d.loc[1]).sort(), ["after", "limit", "since", "stream"], "every bad parameter is named");
    const good = await getJson(url("/v1/audit?limit=5&stream=billing&since=2026-01-01T00:00:00Z"));
    assert.ok(Array.isArray(good.entries), "a good query still answers");
  });

  test("a query string past the header limit is a clean 4xx, and the sidecar serves on", async () => {
    const response = await fetch(url(`/v1/audit?since=${"9".repeat(64 * 1024)}`));
    assert.ok(response.status >= 400 && response.status < 500, `got ${response.status}`);
    await response.arrayBuffer();
    await assertUp(pair.agent.url);
  });

  test("GET routes ignore unknown query parameters; other methods on them are 404, even with a bad body", async () => {
    for (const path of ["/v1/status", "/metrics", "/healthz", "/readyz"]) {
      const response = await fetch(url(`${path}?verbose=1&x[y]=z`));
      assert.equal(response.status, 200, path);
      await response.arrayBuffer();
      for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
        assertError(await send(url(path), "{not json", { "content-type": "application/json" }, method), 404, "EGRESS_ERR_NOT_FOUND");
      }
    }
    const get = await fetch(url("/v1/transactions"));
    assert.deepEqual([get.status, ((await get.json()) as { code: string }).code], [404, "EGRESS_ERR_NOT_FOUND"]);
    assertError(
      await send(
        url("/v1/transactions"),
        JSON.stringify({ trace_transactions: traceTransactions(1) }),
        { "content-type": "application/json" },
        "PUT",
      ),
      404,
    );
  });

  test("unknown routes are 404 whatever the body: malformed, deep, huge, another media type", async () => {
    const before = sidecarStored(pair.agentFixture.dataDir);
    for (const path of ["/v1/transaction", "/v2/transactions", "/v1/transactions/extra", "/v1/beacon/ingest-traces", "/../etc/passwd"]) {
      assertError(await sendJson(url(path), "{broken"), 404, "EGRESS_ERR_NOT_FOUND");
      assertError(await sendJson(url(path), deepArrays(100_000)), 404, "EGRESS_ERR_NOT_FOUND");
      assertError(await sendJson(url(path), `"${"x".repeat(BODY_LIMIT)}"`), 404, "EGRESS_ERR_NOT_FOUND");
      assertError(await send(url(path), "<a/>", { "content-type": "application/xml" }), 404, "EGRESS_ERR_NOT_FOUND");
    }
    assert.deepEqual(sidecarStored(pair.agentFixture.dataDir), before);
    await assertUp(pair.agent.url);
  });

  test("status still reports, and intake still works, after the bad input", async () => {
    const status = await getJson(url("/v1/status"));
    assert.deepEqual(Object.keys(status.streams).sort(), ["billing", "logs", "metrics", "traces", "usage"]);
    const accepted = await postJson(url("/v1/transactions"), { trace_transactions: traceTransactions(2) });
    assert.equal(accepted.status, 202);
    const ready = await fetch(url("/readyz"));
    assert.deepEqual([ready.status, await ready.json()], [200, { ready: true }]);
  });
});
