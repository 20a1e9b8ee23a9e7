import assert from "node:assert/strict";
import { deflateSync, gzipSync } from "node:zlib";
import { after, afterEach, before, beforeEach, describe, test } from "node:test";
import { MAX_VALIDATION_ERRORS } from "../../src/protocol/validation-error.ts";
import {
  logsRequest,
  metricsRequest,
  testLicense,
  traceTransaction,
  traceTransactions,
  tracesRequest,
  usageMeasures,
} from "../helpers/fixtures.ts";
import { beaconConfig, postJson, startBeacon, type BeaconFixture, type ServiceProcess } from "../helpers/processes.ts";
import {
  assertError,
  assertOtlpStatus,
  assertUp,
  assertValidation,
  beaconOtlpBodies,
  beaconStored,
  deepArrays,
  deepObjects,
  malformedJson,
  send,
  sendJson,
  sendTruncated,
  truncatedGzip,
  wrongMediaTypes,
  wrongTopLevel,
} from "./harness.ts";
import { BODY_LIMIT } from "./setup.ts";

// The beacon's routes (docs/beacon.md): validation failures are 422 HTTPValidationError with `loc` at the
// field, other errors `{detail, code}`: 413 over bodyLimit, 415 for anything but uncompressed application/json,
// 404 for an unknown route. The telemetry routes answer as OTLP/HTTP says (they also take protobuf, gzip and deflate):
// every error is a google.rpc.Status in the request's encoding, an undecodable body 400, a malformed item a partial
// success. A refused request stores nothing, and the beacon serves on.

const license = testLicense();
const snapshot = (overrides: Record<string, unknown> = {}) => ({
  license_key: license.key,
  from_timestamp: "2026-11-01T00:00:00+00:00",
  to_timestamp: "2026-11-02T00:00:00+00:00",
  measures: usageMeasures(4),
  ...overrides,
});
/** Every POST route with a body it accepts (the OTLP routes with the token from /verify). */
const routes: Record<string, () => unknown> = {
  "/v1/beacon/verify": () => ({ license: license.key }),
  "/v1/beacon/ingest-traces": () => ({ license: license.key, trace_transactions: traceTransactions(2) }),
  "/v1/beacon/usage-snapshot": () => snapshot(),
  "/v1/beacon/v1/metrics": metricsRequest,
  "/v1/beacon/v1/traces": tracesRequest,
  "/v1/beacon/v1/logs": logsRequest,
};

const isTelemetry = (path: string) => path.startsWith("/v1/beacon/v1/");

describe("beacon: bad input to every route", () => {
  let fixture: BeaconFixture;
  let beacon: ServiceProcess;
  let url: (path: string) => string;
  let auth: Record<string, string>;
  let storedBefore: ReturnType<typeof beaconStored>;

  before(async () => {
    fixture = beaconConfig([license], { bodyLimit: "1MiB" });
    beacon = await startBeacon(fixture);
    url = (path) => `${beacon.url}${path}`;
    auth = { authorization: `Bearer ${(await postJson(url("/v1/beacon/verify"), { license: license.key })).body.token}` };
  });
  after(async () => {
    assert.equal(await beacon.stop("SIGTERM"), 0, "still up, and stops cleanly");
    assert.ok(!beacon.output().includes('"msg":"request failed"'), "no request ended in a 500");
    assert.ok(!beacon.output().includes(license.key), "the key was never logged");
  });
  beforeEach(() => {
    storedBefore = beaconStored(fixture.dataDir);
  });
  const nothingStored = () => assert.deepEqual(beaconStored(fixture.dataDir), storedBefore, "a refused request stores nothing");
  afterEach(() => assertUp(beacon.url));

  test("malformed JSON is 422 json_invalid, an empty body 422 missing, the wrong top-level type 422 invalid_type", async () => {
    for (const path of Object.keys(routes).filter((path) => !isTelemetry(path))) {
      for (const body of Object.values(malformedJson)) assertValidation(await sendJson(url(path), body, auth), ["body"], "json_invalid");
      assertValidation(await sendJson(url(path), "", auth), ["body"], "missing");
      for (const body of Object.values(wrongTopLevel)) assertValidation(await sendJson(url(path), body, auth), ["body"], "invalid_type");
    }
    nothingStored();
  });

  test("telemetry (OTLP/HTTP JSON): malformed JSON, an empty body, the wrong top-level type are 400 with a google.rpc.Status", async () => {
    for (const path of Object.keys(routes).filter(isTelemetry)) {
      for (const body of [...Object.values(malformedJson), "", ...Object.values(wrongTopLevel)]) {
        const answer = assertOtlpStatus(await sendJson(url(path), body, auth), 400, false);
        assert.equal(answer.code, 3, "INVALID_ARGUMENT");
      }
    }
    nothingStored();
  });

  test("wrong types and values are 422 at the field, on every route (telemetry: a partial success)", async () => {
    const post = (path: string, body: unknown) => postJson(url(path), body, auth);
    assertValidation(await post("/v1/beacon/verify", { license: 42 }), ["body", "license"], "invalid_type");
    assertValidation(await post("/v1/beacon/verify", { license: "" }), ["body", "license"], "too_small");
    assertValidation(
      await post("/v1/beacon/ingest-traces", { license: [license.key], trace_transactions: [] }),
      ["body", "license"],
      "invalid_type",
    );
    const batch: Record<string, unknown>[] = traceTransactions(3);
    batch[2] = { ...batch[2], session_id: "session-1", trace_count: -5 };
    assertValidation(
      await post("/v1/beacon/ingest-traces", { license: license.key, trace_transactions: batch }),
      ["body", "trace_transactions", 2, "trace_count"],
      "too_small",
    );
    const withoutId = { license: license.key, trace_transactions: [traceTransaction({ id: undefined })] };
    assertValidation(await post("/v1/beacon/ingest-traces", withoutId), ["body", "trace_transactions", 0, "id"], "missing");
    assertValidation(
      await post("/v1/beacon/usage-snapshot", snapshot({ from_timestamp: "yesterday" })),
      ["body", "from_timestamp"],
      "invalid_format",
    );
    assertValidation(
      await post("/v1/beacon/usage-snapshot", snapshot({ to_timestamp: "2026-10-01T00:00:00Z" })),
      ["body", "to_timestamp"],
      "custom",
    );
    assertValidation(
      await post("/v1/beacon/usage-snapshot", snapshot({ measures: { ...usageMeasures(), users: "9" } })),
      ["body", "measures", "users"],
      "invalid_type",
    );
    assertValidation(await post("/v1/beacon/usage-snapshot", snapshot({ measures: [] })), ["body", "measures"], "invalid_type");
    // Telemetry: a malformed item is not taken, and said so in a partial success (OTLP/HTTP), naming its path.
    const metrics = metricsRequest() as any;
    metrics.resourceMetrics[0].scopeMetrics[0].metrics[0].gauge.dataPoints[0].timeUnixNano = "soon";
    const badPoint = await post("/v1/beacon/v1/metrics", metrics);
    assert.equal(badPoint.status, 200);
    assert.equal(badPoint.body.partialSuccess.rejectedDataPoints, 1);
    assert.match(
      badPoint.body.partialSuccess.errorMessage,
      /resourceMetrics\.0\.scopeMetrics\.0\.metrics\.0\.gauge\.dataPoints\.0\.timeUnixNano/,
    );
    const traces = tracesRequest() as any;
    traces.resourceSpans[0].scopeSpans[0].spans[0].spanId = 7;
    const badSpan = await post("/v1/beacon/v1/traces", traces);
    assert.equal(badSpan.body.partialSuccess.rejectedSpans, 1);
    assert.match(badSpan.body.partialSuccess.errorMessage, /spans\.0\.spanId/);
    const notAList = await sendJson(url("/v1/beacon/v1/logs"), JSON.stringify({ resourceLogs: {} }), auth);
    assert.match(assertOtlpStatus(notAList, 400, false).message, /resourceLogs: must be a list/);
    // Without a token the body is not even read: 401 (a Status, UNAUTHENTICATED), not a validation of what an anonymous sender wrote.
    const unauthenticated = await sendJson(url("/v1/beacon/v1/logs"), JSON.stringify({ resourceLogs: "x" }));
    assert.equal(assertOtlpStatus(unauthenticated, 401, false).code, 16);
    // Only the good metric beside the bad data point was stored (a partial success stores what it took).
    assert.deepEqual(beaconStored(fixture.dataDir), { ...storedBefore, otlp: storedBefore.otlp + 1 });
    assert.ok(beaconOtlpBodies(fixture.dataDir).at(-1)!.includes("platform_http_requests_failed"));
    assert.ok(!beaconOtlpBodies(fixture.dataDir).at(-1)!.includes("platform_http_requests_latency"));
  });

  test("unknown fields: an unknown usage measure is refused; elsewhere they are ignored, and not stored", async () => {
    const extra = snapshot({ measures: { ...usageMeasures(), seats_sold: 1 } });
    assertValidation(await postJson(url("/v1/beacon/usage-snapshot"), extra), ["body", "measures", "seats_sold"], "extra_forbidden");
    nothingStored();
    const verify = await postJson(url("/v1/beacon/verify"), { license: license.key, hostname: "node-7" });
    assert.equal(verify.status, 200);
    const transaction = { ...traceTransaction(), customer_email: "alice@example.com" };
    const ingest = await postJson(url("/v1/beacon/ingest-traces"), { license: license.key, trace_transactions: [transaction], note: 1 });
    assert.deepEqual([ingest.status, ingest.body], [200, { inserted_count: 1 }]);
    const logs = { ...logsRequest(), vendor: "x" } as any;
    logs.resourceLogs[0].scopeLogs[0].logRecords[0].customer_email = "alice@example.com";
    assert.equal((await postJson(url("/v1/beacon/v1/logs"), logs, auth)).status, 200);
    assert.deepEqual(beaconStored(fixture.dataDir), {
      ...storedBefore,
      transactions: storedBefore.transactions + 1,
      otlp: storedBefore.otlp + 1,
    });
    assert.ok(
      !beaconOtlpBodies(fixture.dataDir).some((body) => body.includes("alice@example.com") || body.includes('"vendor"')),
      "stored normalised, unknown fields gone",
    );
  });

  test("huge bodies: over bodyLimit is 413; too many or too many bad items are 422 with at most 100 problems (telemetry: a partial success)", async () => {
    for (const path of Object.keys(routes)) {
      const answer = await sendJson(url(path), JSON.stringify({ padding: "x".repeat(BODY_LIMIT) }), auth);
      if (isTelemetry(path)) {
        assert.match(assertOtlpStatus(answer, 413, false).message, /limit \(bodyLimit\)$/);
        continue;
      }
      assertError(answer, 413, "EGRESS_ERR_BODY_TOO_LARGE");
      // verify takes a license key, nothing larger: its limit is its own.
      const limit = path === "/v1/beacon/verify" ? /4096-byte limit$/ : /limit \(bodyLimit\)$/;
      assert.match(answer.json.detail, limit, "names the limit");
    }
    assertError(await sendJson(url("/v1/beacon/verify"), JSON.stringify({ license: "x".repeat(4096) })), 413);
    const empties = (n: number) => `{"license":${JSON.stringify(license.key)},"trace_transactions":[${Array(n).fill("{}").join(",")}]}`;
    const tooMany = assertValidation(
      await sendJson(url("/v1/beacon/ingest-traces"), empties(10_001)),
      ["body", "trace_transactions"],
      "too_big",
    );
    assert.equal(tooMany.length, 1);
    const capped = assertValidation(
      await sendJson(url("/v1/beacon/ingest-traces"), empties(10_000)),
      ["body", "trace_transactions", 0, "id"],
      "missing",
    );
    assert.equal(capped.length, MAX_VALIDATION_ERRORS);
    // 200,000 bad log records: each rejected alone, counted, and a message of the first few.
    const wide = `{"resourceLogs":[{"scopeLogs":[{"logRecords":[${Array(200_000).fill("[]").join(",")}]}]}]}`;
    const answer = await sendJson(url("/v1/beacon/v1/logs"), wide, auth);
    assert.equal(answer.status, 200);
    assert.equal(answer.json.partialSuccess.rejectedLogRecords, 200_000);
    assert.ok(answer.json.partialSuccess.errorMessage.length < 1000, "a bounded message");
    nothingStored();
  });

  test("deep nesting, 100,000 levels at the top or in a field, is 422 json_invalid (telemetry: 400 or ignored), not a stack overflow", async () => {
    for (const path of Object.keys(routes)) {
      for (const body of [deepArrays(100_000), deepObjects(100_000), `{"license":${deepArrays(100_000)}}`]) {
        const answer = await sendJson(url(path), body, auth);
        if (path === "/v1/beacon/verify")
          assertError(answer, 413, "EGRESS_ERR_BODY_TOO_LARGE"); // past its 4 KiB
        else if (!isTelemetry(path)) assertValidation(answer, ["body"], "json_invalid");
        // OTLP ignores unknown fields: deep objects under them are an empty request; a deep array is not a request.
        else if (body.startsWith("[")) assertOtlpStatus(answer, 400, false);
        else assert.deepEqual([answer.status, answer.json], [200, {}]);
      }
    }
    // OTLP values nest by schema (arrayValue in arrayValue): 20,000 of them once overflowed the validator's stack (a 500).
    const deepValue = `${'{"arrayValue":{"values":['.repeat(20_000)}{}${"]}}".repeat(20_000)}`;
    const logs = JSON.stringify(logsRequest()).replace('{"stringValue":"connection pool nearly exhausted"}', deepValue);
    const deep = await sendJson(url("/v1/beacon/v1/logs"), logs, auth);
    assert.equal(deep.status, 200);
    assert.match(deep.json.partialSuccess.errorMessage, /nested too deeply/);
    nothingStored();
  });

  test("the JSON routes: other media types and any Content-Encoding are 415; a body cut off mid-stream is 400", async () => {
    for (const [path, good] of Object.entries(routes).filter(([path]) => !isTelemetry(path))) {
      for (const { headers, body } of Object.values(wrongMediaTypes))
        assertError(await send(url(path), body, { ...headers, ...auth }), 415);
      assertError(await send(url(path), new Uint8Array([0x0a, 0x00]), { "content-type": "application/x-protobuf", ...auth }), 415);
      const json = JSON.stringify(good());
      for (const [encoding, body] of [
        ["gzip", gzipSync(json)],
        ["gzip", truncatedGzip(good())],
        ["deflate", deflateSync(json)],
        ["gzip", json],
      ] as const) {
        assertError(await sendJson(url(path), body, { "content-encoding": encoding, ...auth }), 415, "EGRESS_ERR_CONTENT_ENCODING");
      }
      assert.equal(await sendTruncated(url(path), json, auth), 400);
    }
    nothingStored();
  });

  test("the telemetry routes (OTLP/HTTP): other media types are 415; bad gzip, deflate or protobuf 400; each a google.rpc.Status", async () => {
    for (const [path, good] of Object.entries(routes).filter(([path]) => isTelemetry(path))) {
      for (const { headers, body } of Object.values(wrongMediaTypes).filter(
        ({ headers }) => headers["content-type"] !== "application/x-protobuf",
      ))
        assertOtlpStatus(await send(url(path), body, { ...headers, ...auth }), 415, false);
      const json = JSON.stringify(good());
      const badGzip = await sendJson(url(path), truncatedGzip(good()), { "content-encoding": "gzip", ...auth });
      assert.match(assertOtlpStatus(badGzip, 400, false).message, /not valid gzip/);
      assertOtlpStatus(await sendJson(url(path), json, { "content-encoding": "deflate", ...auth }), 400, false);
      assertOtlpStatus(await sendJson(url(path), json, { "content-encoding": "br", ...auth }), 415, false);
      const garbage = await send(url(path), new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0x0f]), {
        "content-type": "application/x-protobuf",
        ...auth,
      });
      assert.match(assertOtlpStatus(garbage, 400, true).message, /not a valid Export/);
      assert.equal(await sendTruncated(url(path), json, auth), 400);
    }
    nothingStored();
  });

  test("GET /v1/beacon/jwks.json ignores a query and answers only GET; unknown routes are 404 whatever the body", async () => {
    const jwks = await fetch(url("/v1/beacon/jwks.json?kid=../../etc&x[y]=1"));
    assert.equal(jwks.status, 200);
    const keys = (await jwks.json()) as { keys: unknown[] };
    assert.ok(keys.keys.length > 0, "the signing key is published");
    assert.deepEqual(keys, await (await fetch(url("/v1/beacon/jwks.json"))).json(), "the same keys as without the query");
    assertError(await sendJson(url("/v1/beacon/jwks.json"), "{bad"), 404, "EGRESS_ERR_NOT_FOUND");
    for (const path of ["/v1/beacon/ingest", "/v1/beacon/v1/histograms", "/v1/transactions"]) {
      assertError(await sendJson(url(path), deepArrays(100_000)), 404, "EGRESS_ERR_NOT_FOUND");
      assertError(await send(url(path), "<x/>", { "content-type": "application/xml" }), 404, "EGRESS_ERR_NOT_FOUND");
    }
    nothingStored();
  });

  test("after all of it, every route still takes good input", async () => {
    for (const [path, good] of Object.entries(routes)) {
      const response = await postJson(url(path), good(), auth);
      assert.equal(response.status, 200, `${path}: ${JSON.stringify(response.body)}`);
    }
    assert.deepEqual(beaconStored(fixture.dataDir), {
      transactions: storedBefore.transactions + 2,
      otlp: storedBefore.otlp + 3,
      snapshots: storedBefore.snapshots + 1,
    });
  });
});
