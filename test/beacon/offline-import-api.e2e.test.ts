import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { HTTPValidationError } from "../../src/protocol/validation-error.ts";
import { ADMIN_KEY, admin, adminUrlOf } from "../helpers/beacon-admin.ts";
import { testLicense, traceTransaction, traceTransactions } from "../helpers/fixtures.ts";
import { beaconConfig, startBeacon, type ServiceProcess } from "../helpers/processes.ts";

// POST /v1/admin/offline-imports on a real beacon process (SQLite), over HTTP: what the route takes and refuses.

const PATH = "/v1/admin/offline-imports";
const INSTANCE = "3f0c2a8e-5b1d-4e7a-9c64-2d8b1f0e7a51";
const license = testLicense({ id: "acme-import" });
const other = testLicense({ id: "globex-import" });

const header = (over: Record<string, unknown> = {}) =>
  JSON.stringify({
    egress_export: 1,
    instance_id: INSTANCE,
    license_id: license.id,
    egress_version: "0.1.0",
    mode: "offline",
    exported_at: "2026-12-01T09:00:00.000Z",
    since: "2026-11-01T00:00:00.000Z",
    ...over,
  });
const file = (records: unknown[], head = header()) => `${[head, ...records.map((r) => JSON.stringify(r))].join("\n")}\n`;

/** Headers announcing a large body, none of it sent: only a server that answers from the headers answers at all. */
function headersOnly(url: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: "POST", headers: { "content-length": String(100 << 20), ...headers } }, (response) => {
      let body = "";
      response.on("data", (chunk) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode!, body: JSON.parse(body) }));
    });
    request.on("error", reject);
    request.flushHeaders();
  });
}

function assertLocs(response: { status: number; body: unknown }, expected: [(string | number)[], string][]) {
  assert.equal(response.status, 422, JSON.stringify(response.body));
  const { detail } = HTTPValidationError.parse(response.body);
  assert.deepEqual(
    detail.map((d) => [d.loc, d.type]),
    expected,
  );
}

describe("POST /v1/admin/offline-imports", () => {
  let beacon: ServiceProcess;
  let adminUrl: string;
  const post = async (body: string, options: { query?: string; type?: string; headers?: Record<string, string> } = {}) => {
    const response = await fetch(`${adminUrl}${PATH}${options.query ?? ""}`, {
      method: "POST",
      headers: { "x-api-key": ADMIN_KEY, "content-type": options.type ?? "application/x-ndjson", ...options.headers },
      body,
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  const transactions = async (id: string) =>
    ((await admin(adminUrl, "GET", `/v1/admin/usage?license=${id}`)).body as { transactions: number }[]).reduce(
      (n, r) => n + r.transactions,
      0,
    );

  before(async () => {
    beacon = await startBeacon(beaconConfig([license, other], { admin: { listen: "127.0.0.1:0" } }), { BEACON_ADMIN_API_KEY: ADMIN_KEY });
    adminUrl = adminUrlOf(beacon);
  });
  after(async () => assert.equal(await beacon.stop(), 0));

  test("the admin key is checked from the headers, before any of a large file is read; the public listener has no such route", async () => {
    const refused = await headersOnly(`${adminUrl}${PATH}`, { "content-type": "application/x-ndjson" });
    assert.deepEqual([refused.status, refused.body.code], [401, "EGRESS_ERR_API_KEY_MISSING"]);
    const tooLarge = await headersOnly(`${adminUrl}${PATH}`, { "x-api-key": ADMIN_KEY, "content-length": String(513 << 20) });
    assert.deepEqual([tooLarge.status, tooLarge.body.code], [413, "EGRESS_ERR_BODY_TOO_LARGE"]);
    const onPublic = await fetch(`${beacon.url}${PATH}`, { method: "POST", headers: { "x-api-key": ADMIN_KEY }, body: file([]) });
    assert.equal(onPublic.status, 404);
  });

  test("each bad line is named with its field: loc [body, line, N, field]; nothing of the file is kept", async () => {
    const records = traceTransactions(5);
    const lines = file(records).split("\n");
    lines[2] = JSON.stringify({ ...records[1], tenant_id: "nope" });
    lines[4] = '{"id": "cut short';
    lines[5] = JSON.stringify({ ...records[4], trace_count: -1, status: undefined });
    assertLocs(await post(lines.join("\n")), [
      [["body", "line", 3, "tenant_id"], "invalid_format"],
      [["body", "line", 5], "json_invalid"],
      [["body", "line", 6, "trace_count"], "too_small"],
      [["body", "line", 6, "status"], "missing"],
    ]);
    assertLocs(await post(file([traceTransaction()]).replace("\n", `\n${"x".repeat(70_000)}\n`)), [[["body", "line", 2], "line_too_long"]]);
    assertLocs(await post(""), [[["body", "line", 1], "missing"]]);
    assertLocs(await post(file(records, header({ egress_export: 2 }))), [[["body", "line", 1, "egress_export"], "invalid_value"]]);
    assert.equal(await transactions(license.id), 0);
  });

  test("whose records: the header's license, or ?license= when it names none; an unknown or a contradicting one is refused", async () => {
    const anonymous = header({ license_id: null });
    assertLocs(await post(file([traceTransaction()], anonymous)), [[["body", "line", 1, "license_id"], "missing"]]);
    assertLocs(await post(file([traceTransaction()], anonymous), { query: "?license=nobody" }), [
      [["query", "license"], "license_unknown"],
    ]);
    assertLocs(await post(file([traceTransaction()], header({ license_id: "nobody" }))), [
      [["body", "line", 1, "license_id"], "license_unknown"],
    ]);
    assertLocs(await post(file([traceTransaction()]), { query: `?license=${other.id}` }), [[["query", "license"], "license_mismatch"]]);
    assert.deepEqual((await post(file(traceTransactions(3), anonymous), { query: `?license=${other.id}` })).body, {
      imported: 3,
      duplicates: 0,
    });
    assert.equal(await transactions(other.id), 3);
  });

  test("liberal in its form: text/plain or no type, \\r\\n, blank lines, no final newline; a form body or gzip is refused", async () => {
    const records = traceTransactions(4);
    const crlf = `${file(records.slice(0, 2)).replaceAll("\n", "\r\n")}\r\n${JSON.stringify(records[2])}\n\n${JSON.stringify(records[3])}`;
    assert.deepEqual((await post(crlf, { type: "text/plain" })).body, { imported: 4, duplicates: 0 });
    const untyped = await fetch(`${adminUrl}${PATH}`, {
      method: "POST",
      headers: { "x-api-key": ADMIN_KEY },
      body: Buffer.from(file(records)),
    });
    assert.deepEqual([untyped.status, await untyped.json()], [200, { imported: 0, duplicates: 4 }]);
    const form = await post(file(records), { type: "application/x-www-form-urlencoded" });
    assert.deepEqual([form.status, form.body.code], [415, "EGRESS_ERR_MEDIA_TYPE"]);
    const gzip = await post(file(records), { headers: { "content-encoding": "gzip" } });
    assert.deepEqual([gzip.status, gzip.body.code], [415, "EGRESS_ERR_CONTENT_ENCODING"]);
  });

  test("each record counts once: within a file, and when the same file comes three times at once", async () => {
    const before = await transactions(license.id);
    const record = traceTransaction();
    assert.deepEqual((await post(file([record, record]))).body, { imported: 1, duplicates: 1 });
    const records = traceTransactions(2000);
    const answers = await Promise.all([1, 2, 3].map(() => post(file(records))));
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 200],
    );
    assert.equal(
      answers.reduce((n, a) => n + a.body.imported, 0),
      2000,
    );
    assert.equal(
      answers.reduce((n, a) => n + a.body.duplicates, 0),
      4000,
    );
    assert.equal(await transactions(license.id), before + 2001);
  });

  test("the instance is recorded as seen at exported_at, or at the import if the header says a later time", async () => {
    const [past, future] = ["5a1d6c2e-0b3f-4d8a-9e7c-1f2a3b4c5d6e", "6b2e7d3f-1c4a-4e9b-8f0d-2a3b4c5d6e7f"];
    const start = Date.now();
    await post(file([traceTransaction()], header({ instance_id: past, exported_at: "2026-01-02T03:04:05.000Z" })));
    await post(file([traceTransaction()], header({ instance_id: future, exported_at: "2099-01-01T00:00:00.000Z" })));
    const end = Date.now();
    const { instances } = (await admin(adminUrl, "GET", `/v1/admin/instances?license=${license.id}`)).body;
    const seen = (id: string) => instances.find((i: { instanceId: string }) => i.instanceId === id);
    assert.equal(seen(past).lastSeenAt, "2026-01-02T03:04:05.000Z");
    const clamped = Date.parse(seen(future).lastSeenAt);
    assert.ok(clamped >= start && clamped <= end, `${seen(future).lastSeenAt} is the import's time, not 2099`);
    assert.equal(seen(future).state, "active");
  });
});
