import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { BeaconStore } from "../../src/beacon/store.ts";
import { OTLP_SIGNALS, type OtlpRequest, type OtlpSignal } from "../../src/protocol/otlp.ts";
import { parseExport } from "../../src/protocol/otlp-request.ts";
import {
  type FilterResult,
  filterLogs,
  filterMetrics,
  filterTraces,
  type PrivacyPolicy,
  privacyPolicy,
} from "../../src/sidecar/privacy/policy.ts";
import { telemetryPolicy } from "../../src/sidecar/shippers/telemetry.ts";
import type { OutboxRecord } from "../../src/sidecar/storage/outbox.ts";
import { HTTPValidationError } from "../../src/protocol/validation-error.ts";
import {
  OTHER_ORG_ID,
  logsRequest,
  metricsRequest,
  testLicense,
  traceTransaction,
  traceTransactions,
  tracesRequest,
  usageMeasures,
} from "../helpers/fixtures.ts";
import { parseExportWithZod } from "../helpers/otlp-zod-export.ts";
import { beaconConfig, postJson, runCli, startBeacon, type BeaconFixture, type ServiceProcess } from "../helpers/processes.ts";

const active = testLicense({ id: "acme-prod", seats: 50 });
const other = testLicense({ id: "globex", organizationId: OTHER_ORG_ID, seats: 5 });
const expired = testLicense({ id: "initech-old", expiresAt: "2020-01-01T00:00:00Z" });

async function reportTotal(fixture: BeaconFixture): Promise<{ transactions: number; traces: number }> {
  const { code, stdout, stderr } = await runCli(["beacon", "report", "--config", fixture.configPath, "--json"]);
  assert.equal(code, 0, stderr);
  const rows = JSON.parse(stdout) as { transactions: number; traces: number }[];
  return rows.reduce((t, r) => ({ transactions: t.transactions + r.transactions, traces: t.traces + r.traces }), {
    transactions: 0,
    traces: 0,
  });
}

function assertValidationError(response: { status: number; body: unknown }, loc: (string | number)[], type?: string) {
  assert.equal(response.status, 422, JSON.stringify(response.body));
  const { detail } = HTTPValidationError.parse(response.body);
  const match = detail.find((d) => JSON.stringify(d.loc) === JSON.stringify(loc));
  assert.ok(match, `expected an error at ${JSON.stringify(loc)}, got ${JSON.stringify(detail)}`);
  if (type) assert.equal(match.type, type);
}

describe("beacon service", () => {
  let fixture: BeaconFixture;
  let beacon: ServiceProcess;
  let url: (path: string) => string;

  before(async () => {
    fixture = beaconConfig([active, other, expired], { bodyLimit: "256KiB" });
    beacon = await startBeacon(fixture);
    url = (path) => `${beacon.url}${path}`;
  });
  after(async () => {
    assert.equal(await beacon.stop("SIGTERM"), 0, "SIGTERM ends the beacon with exit code 0");
    assert.ok(!beacon.output().includes(active.key), "the license key never appears in the beacon's output");
    assert.ok(!beacon.output().includes(other.key));
  });

  test("verify: a known license gets an ES256 token naming the license id, verifiable with the published JWKS", async () => {
    const response = await postJson(url("/v1/beacon/verify"), { license: active.key });
    assert.equal(response.status, 200);
    const token = response.body.token as string;
    assert.equal(decodeProtectedHeader(token).alg, "ES256");
    const jwks = createRemoteJWKSet(new URL(url("/v1/beacon/jwks.json")));
    const { payload } = await jwtVerify(token, jwks, { issuer: "egress-beacon" });
    assert.equal(payload.sub, "acme-prod");
    assert.equal(payload.org, active.organizationId);
    assert.equal(payload.seats, 50);
    assert.equal(payload.exp! - payload.iat!, 3600, "default token lifetime is one hour");
    assert.ok(!Buffer.from(token.split(".")[1]!, "base64url").toString().includes(active.key), "the token never carries the key");
  });

  test("verify: an unknown or expired license is refused with 403 and a code saying which", async () => {
    const unknown = await postJson(url("/v1/beacon/verify"), { license: "lic-not-a-real-key-000" });
    assert.equal(unknown.status, 403);
    assert.equal(unknown.body.code, "EGRESS_ERR_LICENSE_UNKNOWN");
    const old = await postJson(url("/v1/beacon/verify"), { license: expired.key });
    assert.equal(old.status, 403);
    assert.equal(old.body.code, "EGRESS_ERR_LICENSE_EXPIRED");
    assert.match(old.body.detail, /initech-old expired at 2020-01-01/);
  });

  test("verify: a missing or mistyped license is 422 naming the field", async () => {
    assertValidationError(await postJson(url("/v1/beacon/verify"), {}), ["body", "license"], "missing");
    assertValidationError(await postJson(url("/v1/beacon/verify"), { license: 42 }), ["body", "license"], "invalid_type");
  });

  test("ingest: a batch is stored and counted once; re-sending it inserts nothing", async () => {
    const before = await reportTotal(fixture);
    const batch = traceTransactions(25);
    const first = await postJson(url("/v1/beacon/ingest-traces"), { license: active.key, trace_transactions: batch });
    assert.deepEqual([first.status, first.body], [200, { inserted_count: 25 }]);
    const again = await postJson(url("/v1/beacon/ingest-traces"), { license: active.key, trace_transactions: batch });
    assert.deepEqual([again.status, again.body], [200, { inserted_count: 0 }]);
    const mixed = await postJson(url("/v1/beacon/ingest-traces"), {
      license: active.key,
      trace_transactions: [...batch.slice(0, 5), ...traceTransactions(3)],
    });
    assert.deepEqual(mixed.body, { inserted_count: 3 }, "only the new ids count");
    const total = await reportTotal(fixture);
    assert.equal(total.transactions - before.transactions, 28);
    assert.equal(total.traces - before.traces, 28 * 7);
  });

  test("ingest: one bad record refuses the whole batch, naming its index and field; nothing is stored", async () => {
    const before = await reportTotal(fixture);
    const cases: [Record<string, unknown>, (string | number)[], string][] = [
      [{ tenant_id: "tenant-1" }, ["tenant_id"], "invalid_format"],
      [{ start_interval_time: "2026-11-01 10:00" }, ["start_interval_time"], "invalid_format"],
      [{ end_insertion_time: "2026-11-01T10:05:00" }, ["end_insertion_time"], "invalid_format"], // no offset: ambiguous
      [{ end_insertion_time: "2026-11-31T10:05:00Z" }, ["end_insertion_time"], "invalid_format"], // no such day
      [{ trace_count: 1.5 }, ["trace_count"], "invalid_type"],
      [{ trace_count: "7" }, ["trace_count"], "invalid_type"],
      [{ num_failed_send_attempts: -1 }, ["num_failed_send_attempts"], "too_small"],
      [{ status: undefined }, ["status"], "missing"],
      [{ end_interval_time: "2026-11-01T09:00:00Z" }, ["end_interval_time"], "custom"],
    ];
    for (const [patch, field, type] of cases) {
      const batch: Record<string, unknown>[] = traceTransactions(5);
      batch[3] = { ...batch[3], ...patch };
      const response = await postJson(url("/v1/beacon/ingest-traces"), { license: active.key, trace_transactions: batch });
      assertValidationError(response, ["body", "trace_transactions", 3, ...field], type);
    }
    assertValidationError(
      await postJson(url("/v1/beacon/ingest-traces"), { license: active.key, trace_transactions: {} }),
      ["body", "trace_transactions"],
      "invalid_type",
    );
    assert.deepEqual(await reportTotal(fixture), before, "no refused batch left a row behind");
  });

  test("ingest: an unknown license is 403 and stores nothing", async () => {
    const before = await reportTotal(fixture);
    const response = await postJson(url("/v1/beacon/ingest-traces"), {
      license: "lic-unknown-key-000",
      trace_transactions: traceTransactions(2),
    });
    assert.equal(response.status, 403);
    assert.equal(response.body.code, "EGRESS_ERR_LICENSE_UNKNOWN");
    assert.deepEqual(await reportTotal(fixture), before);
  });

  test("ingest: a bearer token is checked when sent: valid passes, forged is 401, another license's is 403", async () => {
    const { body } = await postJson(url("/v1/beacon/verify"), { license: active.key });
    const ok = await postJson(
      url("/v1/beacon/ingest-traces"),
      { license: active.key, trace_transactions: traceTransactions(1) },
      { authorization: `Bearer ${body.token}` },
    );
    assert.deepEqual([ok.status, ok.body], [200, { inserted_count: 1 }]);

    const [head, payload] = (body.token as string).split(".");
    const forged = `${head}.${payload}.${"A".repeat(86)}`;
    const bad = await postJson(
      url("/v1/beacon/ingest-traces"),
      { license: active.key, trace_transactions: traceTransactions(1) },
      { authorization: `Bearer ${forged}` },
    );
    assert.equal(bad.status, 401);
    assert.equal(bad.body.code, "EGRESS_ERR_TOKEN_INVALID");

    const otherToken = (await postJson(url("/v1/beacon/verify"), { license: other.key })).body.token;
    const mismatch = await postJson(
      url("/v1/beacon/ingest-traces"),
      { license: active.key, trace_transactions: traceTransactions(1) },
      { authorization: `Bearer ${otherToken}` },
    );
    assert.equal(mismatch.status, 403);
    assert.equal(mismatch.body.code, "EGRESS_ERR_TOKEN_MISMATCH");
  });

  test("tenants: one license's records, key or token can neither claim, read nor change another license's", async () => {
    const shared = traceTransactions(2);
    const fromActive = await postJson(url("/v1/beacon/ingest-traces"), { license: active.key, trace_transactions: shared });
    assert.deepEqual(fromActive.body, { inserted_count: 2 });
    // The same ids from another license (and with the first license's organization on them) are that license's own.
    const fromOther = await postJson(url("/v1/beacon/ingest-traces"), { license: other.key, trace_transactions: shared });
    assert.deepEqual(fromOther.body, { inserted_count: 2 }, "ids another license sent first do not swallow these");
    const again = await postJson(url("/v1/beacon/ingest-traces"), { license: other.key, trace_transactions: shared });
    assert.deepEqual(again.body, { inserted_count: 0 }, "a re-send by the same license is still counted once");
    const store = new BeaconStore(fixture.dataDir, { readonly: true });
    try {
      for (const license of [active, other]) {
        const ids = store.transactionAttempts(license.id);
        assert.ok(
          shared.every((t) => ids.has(t.id)),
          `${license.id} has its own copy`,
        );
      }
    } finally {
      store.close();
    }

    const offline = await runCli(["beacon", "issue-offline-license", "--config", fixture.configPath, "--license", active.id]);
    assert.equal(offline.code, 0, offline.stderr);
    const asBearer = await postJson(
      url("/v1/beacon/ingest-traces"),
      { license: active.key, trace_transactions: traceTransactions(1) },
      { authorization: `Bearer ${offline.stdout.trim()}` },
    );
    assert.equal(asBearer.status, 401);
    assert.equal(asBearer.body.code, "EGRESS_ERR_TOKEN_OFFLINE");
  });

  test("a bad bearer token is refused from the headers: the body is never waited for", async () => {
    for (const path of ["/v1/beacon/ingest-traces", "/v1/beacon/usage-snapshot", "/v1/beacon/v1/metrics"]) {
      // Announces 8 MiB and sends none of it: only a server that answers from the headers answers at all.
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = httpRequest(
          url(path),
          {
            method: "POST",
            headers: { "content-type": "application/json", "content-length": String(8 << 20), authorization: "Bearer not.a.token" },
          },
          (response) => {
            let body = "";
            response.on("data", (chunk) => (body += chunk));
            response.on("end", () => resolve({ status: response.statusCode!, body }));
          },
        );
        request.on("error", reject);
        request.flushHeaders();
      });
      assert.equal(answer.status, 401, path);
      // Telemetry answers as OTLP/HTTP does: a google.rpc.Status (UNAUTHENTICATED), the other routes `{detail, code}`.
      const expected = path === "/v1/beacon/v1/metrics" ? 16 : "EGRESS_ERR_TOKEN_INVALID";
      assert.equal(JSON.parse(answer.body).code, expected, path);
    }
  });

  test("ingest: concurrent senders with overlapping batches store each transaction exactly once", async () => {
    const before = await reportTotal(fixture);
    const pool = traceTransactions(400);
    // 8 senders, each sending 6 batches of 50 drawn from the pool with overlaps between senders.
    const sends = Array.from({ length: 8 }, (_, sender) =>
      (async () => {
        let inserted = 0;
        for (let b = 0; b < 6; b++) {
          const start = (sender * 37 + b * 61) % 350;
          const response = await postJson(url("/v1/beacon/ingest-traces"), {
            license: active.key,
            trace_transactions: pool.slice(start, start + 50),
          });
          assert.equal(response.status, 200);
          inserted += response.body.inserted_count as number;
        }
        return inserted;
      })(),
    );
    const insertedTotal = (await Promise.all(sends)).reduce((a, b) => a + b, 0);
    const distinctSent = new Set<number>();
    for (let sender = 0; sender < 8; sender++) {
      for (let b = 0; b < 6; b++) {
        const start = (sender * 37 + b * 61) % 350;
        for (let i = start; i < start + 50; i++) distinctSent.add(i);
      }
    }
    const after = await reportTotal(fixture);
    assert.equal(insertedTotal, distinctSent.size, "inserted_count over all responses equals the distinct transactions sent");
    assert.equal(after.transactions - before.transactions, distinctSent.size);
  });

  test("otlp: metrics, traces and logs need a bearer token; are validated, stored normalised under its license", async () => {
    const anonymous = await postJson(url("/v1/beacon/v1/metrics"), metricsRequest());
    assert.deepEqual([anonymous.status, anonymous.body.code], [401, 16], "a google.rpc.Status, UNAUTHENTICATED");
    assert.match(anonymous.body.message, /needs 'Authorization: Bearer <token>'/);
    const { token } = (await postJson(url("/v1/beacon/verify"), { license: active.key })).body as { token: string };
    for (const [path, body] of [
      ["/v1/beacon/v1/metrics", metricsRequest()],
      ["/v1/beacon/v1/traces", tracesRequest()],
      ["/v1/beacon/v1/logs", logsRequest()],
    ] as const) {
      const response = await postJson(url(path), body, { authorization: `Bearer ${token}` });
      assert.deepEqual([response.status, response.body], [200, {}], path); // full success: no partialSuccess (OTLP/HTTP)
    }
    const store = new BeaconStore(fixture.dataDir, { readonly: true });
    try {
      const traces = store.otlpBatches("traces");
      assert.equal(traces.length, 1);
      const span = (traces[0]!.body as ReturnType<typeof tracesRequest>).resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
      assert.equal(span.traceId, "5b8efff798038103d269b633813fc60c", "hex ids are stored lower-case");
      assert.deepEqual(
        store.otlpBatches("metrics").map((b) => b.item_count),
        [2],
      );
      assert.deepEqual(
        store.otlpBatches("logs").map((b) => b.item_count),
        [1],
      );
      assert.deepEqual(
        new Set(store.otlpBatches().map((b) => b.license_id)),
        new Set([active.id]),
        "stored under the token's license; the anonymous request stored nothing",
      );
    } finally {
      store.close();
    }
  });

  test("otlp: malformed items are a partial success naming each path; what else the request holds is stored", async () => {
    const { token } = (await postJson(url("/v1/beacon/verify"), { license: active.key })).body as { token: string };
    const bearer = { authorization: `Bearer ${token}` };
    const metrics = metricsRequest();
    const metric = metrics.resourceMetrics[0]!.scopeMetrics[0]!.metrics[0]! as Record<string, unknown>;
    metric.sum = { dataPoints: [] };
    const badMetric = await postJson(url("/v1/beacon/v1/metrics"), metrics, bearer);
    assert.equal(badMetric.status, 200);
    assert.equal(badMetric.body.partialSuccess.rejectedDataPoints, 1);
    assert.match(
      badMetric.body.partialSuccess.errorMessage,
      /resourceMetrics\.0\.scopeMetrics\.0\.metrics\.0: must have exactly one of gauge or sum/,
    );

    const traces = tracesRequest();
    traces.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.traceId = "not-hex";
    const badSpan = await postJson(url("/v1/beacon/v1/traces"), traces, bearer);
    assert.deepEqual([badSpan.status, badSpan.body.partialSuccess.rejectedSpans], [200, 1]);
    assert.match(badSpan.body.partialSuccess.errorMessage, /spans\.0\.traceId: must be 32 hex digits/);
    assert.ok(!badSpan.body.partialSuccess.errorMessage.includes("not-hex"), "paths and rules, never values");

    const logs = logsRequest() as { resourceLogs: { scopeLogs: { logRecords: Record<string, unknown>[] }[] }[] };
    logs.resourceLogs[0]!.scopeLogs[0]!.logRecords[0]!.severityNumber = "WARN";
    const badLog = await postJson(url("/v1/beacon/v1/logs"), logs, bearer);
    assert.deepEqual([badLog.status, badLog.body.partialSuccess.rejectedLogRecords], [200, 1]);

    const store = new BeaconStore(fixture.dataDir, { readonly: true });
    try {
      // The three valid requests of the previous test, and the other metric (the sum) of the one with a bad metric.
      assert.equal(store.otlpBatches().length, 4);
      assert.deepEqual(
        store.otlpBatches("metrics").map((b) => b.item_count),
        [2, 1],
      );
    } finally {
      store.close();
    }
  });

  test("otlp: a request parsing leaves as it is (the sidecar's, in any key order or spacing) is stored as the text sent; any other, normalised", async () => {
    const { token } = (await postJson(url("/v1/beacon/verify"), { license: active.key })).body as { token: string };
    const bearer = { authorization: `Bearer ${token}` };
    const policy = privacyPolicy();
    const filters = { metrics: filterMetrics, traces: filterTraces, logs: filterLogs } as const;
    const requests = { metrics: metricsRequest, traces: tracesRequest, logs: logsRequest };
    const sent: { signal: OtlpSignal; text: string; normalised: boolean }[] = [];
    for (const signal of OTLP_SIGNALS) {
      // What the sidecar sends: two requests through its privacy filter, merged by its telemetry shipper.
      const filtered = () =>
        (filters[signal] as (r: OtlpRequest, p: PrivacyPolicy) => FilterResult<OtlpRequest>)(
          parseExport(signal, requests[signal]()).request,
          policy,
        );
      const records = [0, 1].map((seq) => ({ seq, recordId: null, attempts: 0, body: JSON.stringify(filtered().request) }));
      const merged = telemetryPolicy(signal, 1_000_000)
        .buildPayload(records as OutboxRecord[])
        .toString();
      sent.push({ signal, text: merged, normalised: false });
      sent.push({ signal, text: JSON.stringify(reversedKeys(JSON.parse(merged)), null, 1), normalised: false });
    }
    // Changed by parsing: a number for a 64-bit integer, upper-case hex, an unknown key (the fixtures' own requests).
    const traces = tracesRequest() as unknown as {
      extra?: number;
      resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[];
    };
    traces.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.startTimeUnixNano = 1_700_000_000_000_000_000;
    traces.extra = 1;
    sent.push({ signal: "traces", text: JSON.stringify(traces), normalised: true });
    sent.push({ signal: "metrics", text: JSON.stringify(metricsRequest()), normalised: true });

    const store = new BeaconStore(fixture.dataDir, { readonly: true });
    try {
      const stored = () =>
        store.database.prepare("SELECT seq, body FROM otlp_batches ORDER BY seq").all() as { seq: number; body: string }[];
      const from = stored().at(-1)?.seq ?? 0;
      for (const { signal, text } of sent) {
        const response = await postJson(url(`/v1/beacon/v1/${signal}`), text, bearer);
        assert.deepEqual([response.status, response.body], [200, {}], signal);
      }
      const rows = stored().filter((row) => row.seq > from);
      assert.equal(rows.length, sent.length);
      rows.forEach((row, i) => {
        const { signal, text, normalised } = sent[i]!;
        if (!normalised) assert.equal(row.body, text, `${signal} ${i}: stored as sent`);
        else {
          assert.notEqual(row.body, text, `${signal} ${i}: normalised`);
          assert.deepStrictEqual(
            JSON.parse(row.body),
            parseExportWithZod(signal, JSON.parse(text)).request,
            `${signal} ${i}: as zod outputs it`,
          );
        }
      });
      assert.equal(JSON.parse(rows.at(-2)!.body).resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano, "1700000000000000000");
    } finally {
      store.close();
    }
  });

  test("usage snapshot: stored once per license and window, whatever offset notation the window uses", async () => {
    const snapshot = {
      license_key: active.key,
      from_timestamp: "2026-11-01T00:00:00+00:00",
      to_timestamp: "2026-11-02T00:00:00+00:00",
      measures: usageMeasures(3),
    };
    assert.deepEqual((await postJson(url("/v1/beacon/usage-snapshot"), snapshot)).body, { inserted_count: 1 });
    assert.deepEqual((await postJson(url("/v1/beacon/usage-snapshot"), snapshot)).body, { inserted_count: 0 });
    const sameWindow = { ...snapshot, from_timestamp: "2026-11-01T01:00:00+01:00", to_timestamp: "2026-11-02T00:00:00Z" };
    assert.deepEqual((await postJson(url("/v1/beacon/usage-snapshot"), sameWindow)).body, { inserted_count: 0 });
    const otherLicense = { ...snapshot, license_key: other.key };
    assert.deepEqual((await postJson(url("/v1/beacon/usage-snapshot"), otherLicense)).body, { inserted_count: 1 });

    const store = new BeaconStore(fixture.dataDir, { readonly: true });
    try {
      const rows = store.usageSnapshots();
      assert.deepEqual(rows.map((r) => r.license_id).sort(), ["acme-prod", "globex"]);
      assert.equal(rows[0]!.from_timestamp, "2026-11-01T00:00:00.000Z");
      assert.deepEqual(rows[0]!.measures, usageMeasures(3));
    } finally {
      store.close();
    }
  });

  test("usage snapshot: unknown measures, negative counts, reversed windows and unknown licenses are refused", async () => {
    const good = {
      license_key: active.key,
      from_timestamp: "2026-12-01T00:00:00Z",
      to_timestamp: "2026-12-02T00:00:00Z",
      measures: usageMeasures(),
    };
    assertValidationError(
      await postJson(url("/v1/beacon/usage-snapshot"), { ...good, measures: { ...usageMeasures(), user_emails: 2 } }),
      ["body", "measures", "user_emails"],
      "extra_forbidden",
    );
    assertValidationError(
      await postJson(url("/v1/beacon/usage-snapshot"), { ...good, measures: { ...usageMeasures(), users: -1 } }),
      ["body", "measures", "users"],
      "too_small",
    );
    assertValidationError(
      await postJson(url("/v1/beacon/usage-snapshot"), { ...good, measures: { ...usageMeasures(), prompts: undefined } }),
      ["body", "measures", "prompts"],
      "missing",
    );
    assertValidationError(await postJson(url("/v1/beacon/usage-snapshot"), { ...good, to_timestamp: good.from_timestamp }), [
      "body",
      "to_timestamp",
    ]);
    assertValidationError(
      await postJson(url("/v1/beacon/usage-snapshot"), { ...good, from_timestamp: "yesterday" }),
      ["body", "from_timestamp"],
      "invalid_format",
    );
    const unknown = await postJson(url("/v1/beacon/usage-snapshot"), { ...good, license_key: "lic-unknown-key-000" });
    assert.equal(unknown.status, 403);
    const store = new BeaconStore(fixture.dataDir, { readonly: true });
    try {
      assert.ok(!store.usageSnapshots().some((r) => r.from_timestamp.startsWith("2026-12")), "no refused snapshot was stored");
    } finally {
      store.close();
    }
  });

  test("beacon.db, its WAL and the data dir are owner-only", async () => {
    const { statSync } = await import("node:fs");
    for (const file of ["", "beacon.db", "beacon.db-wal"]) {
      const mode = statSync(`${fixture.dataDir}/${file}`).mode & 0o777;
      assert.equal(mode & 0o077, 0, `${file || "data dir"} is ${mode.toString(8)}`);
    }
  });

  test("http: oversized bodies 413, wrong content types 415, malformed JSON 422, unknown routes 404, all JSON", async () => {
    const huge = { license: active.key, trace_transactions: traceTransactions(1000) };
    const tooLarge = await postJson(url("/v1/beacon/ingest-traces"), huge);
    assert.equal(tooLarge.status, 413);
    assert.equal(tooLarge.body.code, "EGRESS_ERR_BODY_TOO_LARGE");

    for (const type of ["text/plain", "application/x-www-form-urlencoded", "application/xml"]) {
      const response = await fetch(url("/v1/beacon/verify"), { method: "POST", headers: { "content-type": type }, body: "license=x" });
      assert.equal(response.status, 415, type);
      assert.match(response.headers.get("content-type") ?? "", /application\/json/);
    }

    assertValidationError(await postJson(url("/v1/beacon/verify"), '{"license": "abc'), ["body"], "json_invalid");
    const notFound = await fetch(url("/v1/beacon/nothing"));
    assert.equal(notFound.status, 404);
    const text = await notFound.text();
    assert.equal(JSON.parse(text).code, "EGRESS_ERR_NOT_FOUND");
    assert.ok(!/at .*\.ts:\d+/.test(text), "no stack trace in an error body");
  });
});

describe("beacon restart", () => {
  test("keeps ingested data and its signing key: re-sends insert nothing, old tokens still verify", async () => {
    const license = testLicense();
    const fixture = beaconConfig([license]);
    const batch = traceTransactions(10);
    let beacon = await startBeacon(fixture);
    assert.deepEqual((await postJson(`${beacon.url}/v1/beacon/ingest-traces`, { license: license.key, trace_transactions: batch })).body, {
      inserted_count: 10,
    });
    const token = (await postJson(`${beacon.url}/v1/beacon/verify`, { license: license.key })).body.token as string;
    assert.equal(await beacon.stop(), 0);

    beacon = await startBeacon(fixture);
    try {
      assert.deepEqual(
        (await postJson(`${beacon.url}/v1/beacon/ingest-traces`, { license: license.key, trace_transactions: batch })).body,
        { inserted_count: 0 },
      );
      const jwks = createRemoteJWKSet(new URL(`${beacon.url}/v1/beacon/jwks.json`));
      const { payload } = await jwtVerify(token, jwks);
      assert.equal(payload.sub, license.id);
      const withToken = await postJson(
        `${beacon.url}/v1/beacon/ingest-traces`,
        { license: license.key, trace_transactions: [traceTransaction()] },
        { authorization: `Bearer ${token}` },
      );
      assert.deepEqual(withToken.body, { inserted_count: 1 });
    } finally {
      assert.equal(await beacon.stop(), 0);
    }
    assert.deepEqual(await reportTotal(fixture), { transactions: 11, traces: 77 });
  });
});

/** A deep copy with every object's keys in reverse order (a sender's order need not be the schema's). */
function reversedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversedKeys);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([k, v]) => [k, reversedKeys(v)]),
  );
}
