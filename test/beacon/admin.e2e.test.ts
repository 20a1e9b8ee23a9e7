import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { beaconPaths } from "../../src/protocol/beacon-paths.ts";
import { HTTPValidationError } from "../../src/protocol/validation-error.ts";
import { ADMIN_KEY, admin, adminUrlOf } from "../helpers/beacon-admin.ts";
import { ORG_ID, OTHER_ORG_ID, testLicense, traceTransactions, usageMeasures } from "../helpers/fixtures.ts";
import { beaconConfig, postJson, runCli, startBeacon, waitFor, type BeaconFixture, type ServiceProcess } from "../helpers/processes.ts";

// The vendor's side: a real beacon process (SQLite) with its admin listener, driven over HTTP and by the CLI.

const fromConfig = testLicense({ id: "acme-config" });
const SECOND_KEY = "second-admin-SECRET-key-000000";
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const fingerprint = (key: string) => `key:${sha256(key).slice(0, 8)}`;
const DAY = 24 * 3600 * 1000;
const inDays = (days: number) => new Date(Date.now() + days * DAY).toISOString();
const licenseBody = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  organizationId: ORG_ID,
  expiresAt: inDays(365),
  seats: 5,
  ...extra,
});

function assertLoc(response: { status: number; body: unknown }, loc: (string | number)[], type?: string) {
  assert.equal(response.status, 422, JSON.stringify(response.body));
  const { detail } = HTTPValidationError.parse(response.body);
  const match = detail.find((d) => JSON.stringify(d.loc) === JSON.stringify(loc));
  assert.ok(match, `expected a problem at ${JSON.stringify(loc)}, got ${JSON.stringify(detail)}`);
  if (type) assert.equal(match.type, type);
}

/** Headers announcing a large body, none of it sent: only a server that answers from the headers answers at all. */
function headersOnly(url: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: "POST", headers: { "content-type": "application/json", "content-length": String(4 << 20), ...headers } },
      (response) => {
        let body = "";
        response.on("data", (chunk) => (body += chunk));
        response.on("end", () => resolve({ status: response.statusCode!, body: JSON.parse(body) }));
      },
    );
    request.on("error", reject);
    request.flushHeaders();
  });
}

describe("the beacon's admin listener", () => {
  let fixture: BeaconFixture;
  let beacon: ServiceProcess;
  let adminUrl: string;
  let publicUrl: string;
  const keys: string[] = [];
  const call = (method: string, path: string, body?: unknown, key: string | null = ADMIN_KEY) => admin(adminUrl, method, path, body, key);
  const verify = (key: string) => postJson(`${publicUrl}${beaconPaths.verify}`, { license: key });
  const ingest = (key: string, token?: string) =>
    postJson(
      `${publicUrl}${beaconPaths.ingestTraces}`,
      { license: key, trace_transactions: traceTransactions(3, { start_interval_time: "2026-10-05T10:00:00Z" }) },
      token ? { authorization: `Bearer ${token}` } : {},
    );

  before(async () => {
    fixture = beaconConfig([fromConfig], { admin: { listen: "127.0.0.1:0", apiKeys: [`sha256:${sha256(SECOND_KEY)}`] } });
    beacon = await startBeacon(fixture, { BEACON_ADMIN_API_KEY: ADMIN_KEY });
    adminUrl = adminUrlOf(beacon);
    publicUrl = beacon.url;
  });
  after(async () => {
    assert.equal(await beacon.stop("SIGTERM"), 0);
    const output = beacon.output();
    for (const secret of [ADMIN_KEY, SECOND_KEY, fromConfig.key, ...keys])
      assert.ok(!output.includes(secret), "no key in the beacon's logs");
  });

  test("every admin route needs an admin key, checked before the body is read; the public listener serves none of them", async () => {
    const routes: [string, string][] = [
      ["POST", "/v1/admin/licenses"],
      ["GET", "/v1/admin/licenses"],
      ["GET", "/v1/admin/licenses/acme-config"],
      ["PATCH", "/v1/admin/licenses/acme-config"],
      ["POST", "/v1/admin/licenses/acme-config/revoke"],
      ["POST", "/v1/admin/licenses/acme-config/rotate-key"],
      ["GET", "/v1/admin/usage"],
      ["GET", "/v1/admin/audit"],
      ["GET", "/v1/admin/instances"],
      ["GET", "/v1/admin/usage-snapshots"],
    ];
    for (const [method, path] of routes) {
      const missing = await call(method, path, method === "GET" ? undefined : {}, null);
      assert.deepEqual([missing.status, missing.body.code], [401, "EGRESS_ERR_API_KEY_MISSING"], `${method} ${path}`);
      assert.equal(typeof missing.body.detail, "string");
      const wrong = await call(method, path, method === "GET" ? undefined : {}, fromConfig.key);
      assert.deepEqual(
        [wrong.status, wrong.body.code],
        [401, "EGRESS_ERR_API_KEY_INVALID"],
        `${method} ${path}: a license key is no admin key`,
      );
      const onPublic = await admin(publicUrl, method, path, method === "GET" ? undefined : {});
      assert.deepEqual([onPublic.status, onPublic.body.code], [404, "EGRESS_ERR_NOT_FOUND"], `${method} ${path} on the public listener`);
    }
    const unread = await headersOnly(`${adminUrl}/v1/admin/licenses`, { "x-api-key": "not-an-admin-key-000000" });
    assert.deepEqual([unread.status, unread.body.code], [401, "EGRESS_ERR_API_KEY_INVALID"], "answered from the headers alone");
    assert.equal((await call("GET", "/v1/admin/licenses")).body.licenses.length, 1, "nothing was created");
  });

  test("an instance that verified is listed on the admin listener, counted on its license and shown on the license's page", async () => {
    const instanceId = "5d2c9a41-7e3b-4f6a-8c1d-2b9e0f4a6c73";
    const verified = await postJson(
      `${publicUrl}${beaconPaths.verify}`,
      { license: fromConfig.key },
      { "x-egress-instance-id": instanceId, "user-agent": "egress-agent/9.8.7 (online)" },
    );
    assert.equal(verified.status, 200);
    const listed = await call("GET", "/v1/admin/instances");
    const row = listed.body.instances.find((i: { instanceId: string }) => i.instanceId === instanceId);
    assert.deepEqual([row?.licenseId, row?.version, row?.mode, row?.state], ["acme-config", "9.8.7", "online", "active"]);
    const licenses = await call("GET", "/v1/admin/licenses");
    assert.ok(licenses.body.licenses.find((l: { id: string }) => l.id === "acme-config").instances >= 1);
    const page = await call("GET", "/v1/admin/licenses/acme-config");
    assert.ok(
      page.body.instances.some((i: { instanceId: string }) => i.instanceId === instanceId),
      JSON.stringify(page.body.instances),
    );
  });

  test("usage snapshots a license's sidecar sent are listed, newest first, that license's only when asked", async () => {
    const snapshot = (from: string, to: string, users: number) => ({
      license_key: fromConfig.key,
      from_timestamp: from,
      to_timestamp: to,
      measures: usageMeasures(users),
    });
    for (const [from, to, users] of [
      ["2026-11-20T00:00:00Z", "2026-11-20T01:00:00Z", 3],
      ["2026-11-20T01:00:00Z", "2026-11-20T02:00:00Z", 4],
    ] as const) {
      assert.equal((await postJson(`${publicUrl}${beaconPaths.usageSnapshot}`, snapshot(from, to, users))).status, 200);
    }
    const listed = await call("GET", "/v1/admin/usage-snapshots?license=acme-config&limit=10");
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(
      listed.body.snapshots
        .slice(0, 2)
        .map((s: { licenseId: string; fromTimestamp: string; measures: { users: number } }) => [
          s.licenseId,
          s.fromTimestamp,
          s.measures.users,
        ]),
      [
        ["acme-config", "2026-11-20T01:00:00.000Z", 4],
        ["acme-config", "2026-11-20T00:00:00.000Z", 3],
      ],
    );
    assertLoc(await call("GET", "/v1/admin/usage-snapshots?license=%3Cscript%3E"), ["query", "license"]);
  });

  test("no public route takes an admin key", async () => {
    const verified = await verify(ADMIN_KEY);
    assert.deepEqual([verified.status, verified.body.code], [403, "EGRESS_ERR_LICENSE_UNKNOWN"]);
    const ingested = await ingest(fromConfig.key, ADMIN_KEY);
    assert.deepEqual([ingested.status, ingested.body.code], [401, "EGRESS_ERR_TOKEN_INVALID"]);
    const metrics = await postJson(`${publicUrl}${beaconPaths.metrics}`, { resourceMetrics: [] }, { authorization: `Bearer ${ADMIN_KEY}` });
    assert.equal(metrics.status, 401);
  });

  test("a license made through the API is in force at once; bad input is a clear 4xx that changes nothing", async () => {
    // Verifications are written on the license poll's tick: one an earlier test made may land between the two reads.
    const licenses = async () =>
      (await call("GET", "/v1/admin/licenses")).body.licenses.map(({ lastVerifiedAt: _, ...license }: Record<string, unknown>) => license);
    const listBefore = await licenses();
    const auditBefore = (await call("GET", "/v1/admin/audit")).body.records.length;
    assertLoc(await call("POST", "/v1/admin/licenses", { id: "x" }), ["body", "organizationId"], "missing");
    assertLoc(await call("POST", "/v1/admin/licenses", licenseBody("x", { organizationId: "nope" })), ["body", "organizationId"]);
    assertLoc(await call("POST", "/v1/admin/licenses", licenseBody("x", { seats: -1 })), ["body", "seats"], "too_small");
    assertLoc(await call("POST", "/v1/admin/licenses", licenseBody("x", { expiresAt: "tomorrow" })), ["body", "expiresAt"]);
    assertLoc(await call("POST", "/v1/admin/licenses", licenseBody("has space")), ["body", "id"]);
    assertLoc(await call("POST", "/v1/admin/licenses", licenseBody("x", { key: "my-own-key" })), ["body", "key"], "extra_forbidden");
    assertLoc(await call("POST", "/v1/admin/licenses", "{not json"), ["body"], "json_invalid");
    const taken = await call("POST", "/v1/admin/licenses", licenseBody("acme-config", { organizationId: OTHER_ORG_ID }));
    assert.deepEqual([taken.status, taken.body.code], [409, "EGRESS_ERR_LICENSE_EXISTS"]);
    assertLoc(await call("PATCH", "/v1/admin/licenses/acme-config", {}), ["body"]);
    assertLoc(await call("PATCH", "/v1/admin/licenses/acme-config", { seats: "many" }), ["body", "seats"]);
    assertLoc(await call("PATCH", "/v1/admin/licenses/acme-config", { organizationId: OTHER_ORG_ID }), ["body", "organizationId"]);
    assertLoc(await call("GET", "/v1/admin/licenses/a%20b"), ["path", "id"]);
    assertLoc(await call("GET", "/v1/admin/usage?month=2026-13"), ["query", "month"]);
    assertLoc(await call("GET", "/v1/admin/audit?limit=0"), ["query", "limit"]);
    for (const [method, path, body] of [
      ["GET", "/v1/admin/licenses/nope", undefined],
      ["PATCH", "/v1/admin/licenses/nope", { seats: 1 }],
      ["POST", "/v1/admin/licenses/nope/revoke", undefined],
      ["POST", "/v1/admin/licenses/nope/rotate-key", undefined],
    ] as const) {
      const missing = await call(method, path, body);
      assert.deepEqual([missing.status, missing.body.code], [404, "EGRESS_ERR_LICENSE_NOT_FOUND"], `${method} ${path}`);
    }
    assert.deepEqual(await licenses(), listBefore, "nothing changed");
    assert.equal((await call("GET", "/v1/admin/audit")).body.records.length, auditBefore, "nothing audited");

    const created = await call("POST", "/v1/admin/licenses", licenseBody("initech", { seats: 7 }));
    assert.equal(created.status, 201, JSON.stringify(created.body));
    keys.push(created.body.key);
    assert.match(created.body.key, /^lic-[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(
      [created.body.id, created.body.seats, created.body.state, created.body.offlineAllowed, created.body.lastVerifiedAt],
      ["initech", 7, "active", false, null],
    );
    assert.equal((await call("GET", "/v1/admin/licenses/initech")).body.key, undefined, "the key is shown once");
    const verified = await verify(created.body.key);
    assert.equal(verified.status, 200, "in force at once, no restart");
    assert.deepEqual((await ingest(created.body.key, verified.body.token)).body, { inserted_count: 3 });

    const listed = await waitFor(
      async () => {
        const { licenses } = (await call("GET", "/v1/admin/licenses")).body;
        const one = licenses.find((l: { id: string }) => l.id === "initech");
        return one?.lastVerifiedAt ? one : undefined;
      },
      5000,
      "lastVerifiedAt",
    );
    assert.deepEqual(Object.keys(listed).sort(), [
      "expiresAt",
      "id",
      "instances",
      "lastVerifiedAt",
      "offlineAllowed",
      "organizationId",
      "revokedAt",
      "seats",
      "state",
    ]);
    assert.equal(listed.instances, 0);

    const renewed = await call("PATCH", "/v1/admin/licenses/initech", { expiresAt: inDays(10) });
    assert.deepEqual([renewed.status, renewed.body.state, renewed.body.seats], [200, "expiring", 7]);
    const lapsed = await call("PATCH", "/v1/admin/licenses/initech", { expiresAt: inDays(-1), seats: 9 });
    assert.deepEqual([lapsed.body.state, lapsed.body.seats], ["expired", 9]);
    assert.deepEqual((await verify(created.body.key)).body.code, "EGRESS_ERR_LICENSE_EXPIRED", "the renewal's undoing is in force too");
    await call("PATCH", "/v1/admin/licenses/initech", { expiresAt: inDays(400) });
    assert.equal((await verify(created.body.key)).status, 200);

    const shown = (await call("GET", "/v1/admin/licenses/initech")).body;
    assert.deepEqual([shown.instances, shown.usage], [[], [{ month: "2026-10", transactions: 3, traces: 21 }]]);
    const usage = (await call("GET", "/v1/admin/usage?license=initech&month=2026-10")).body;
    const report = await runCli([
      "beacon",
      "report",
      "--config",
      fixture.configPath,
      "--license",
      "initech",
      "--month",
      "2026-10",
      "--json",
    ]);
    assert.deepEqual(usage, JSON.parse(report.stdout), "the billing report's rows");
  });

  test("revoked: verify refuses its key and ingest its unexpired tokens; a rotated key: the old key and older tokens are refused", async () => {
    const created = (await call("POST", "/v1/admin/licenses", licenseBody("umbrella"))).body;
    const rotating = (await call("POST", "/v1/admin/licenses", licenseBody("hooli"))).body;
    keys.push(created.key, rotating.key);
    const token = (await verify(created.key)).body.token;
    const oldToken = (await verify(rotating.key)).body.token;
    assert.equal((await ingest(created.key, token)).status, 200);

    const revoked = await call("POST", "/v1/admin/licenses/umbrella/revoke");
    assert.deepEqual([revoked.status, revoked.body.state, typeof revoked.body.revokedAt], [200, "revoked", "string"]);
    const refused = await verify(created.key);
    assert.deepEqual([refused.status, refused.body.code], [403, "EGRESS_ERR_LICENSE_REVOKED"]);
    const withToken = await ingest(created.key, token);
    assert.deepEqual([withToken.status, withToken.body.code], [403, "EGRESS_ERR_LICENSE_REVOKED"]);
    const telemetry = await postJson(`${publicUrl}${beaconPaths.metrics}`, { resourceMetrics: [] }, { authorization: `Bearer ${token}` });
    assert.equal(telemetry.status, 403);

    // Tokens carry their issue time in seconds: the rotation comes in a later second than the old token.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const rotated = await call("POST", "/v1/admin/licenses/hooli/rotate-key");
    assert.equal(rotated.status, 200);
    assert.deepEqual(Object.keys(rotated.body), ["key"]);
    assert.notEqual(rotated.body.key, rotating.key);
    keys.push(rotated.body.key);
    assert.equal((await verify(rotating.key)).body.code, "EGRESS_ERR_LICENSE_UNKNOWN", "the old key");
    const stale = await ingest(rotated.body.key, oldToken);
    assert.deepEqual([stale.status, stale.body.code], [401, "EGRESS_ERR_TOKEN_INVALID"], "a token from before the rotation");
    const fresh = await verify(rotated.body.key);
    assert.equal(fresh.status, 200);
    assert.equal((await ingest(rotated.body.key, fresh.body.token)).status, 200);
  });

  test("admin actions are audited: who (the key's fingerprint), what, when; never a key", async () => {
    const before = Date.now();
    await call("POST", "/v1/admin/licenses", licenseBody("audited"), SECOND_KEY);
    await call("PATCH", "/v1/admin/licenses/audited", { seats: 3 }, ADMIN_KEY);
    const { records } = (await call("GET", "/v1/admin/audit?license=audited")).body;
    assert.deepEqual(
      records.map((r: { actor: string; action: string }) => [r.actor, r.action]),
      [
        [fingerprint(ADMIN_KEY), "license.update"],
        [fingerprint(SECOND_KEY), "license.create"],
      ],
    );
    assert.ok(records.every((r: { at: string }) => Date.parse(r.at) >= before - 1000));
    assert.deepEqual(records[0].detail, { seats: 3 });
    const all = JSON.stringify((await call("GET", "/v1/admin/audit?limit=1000")).body);
    assert.ok(all.includes('"actor":"config"'), "beacon.yaml's licenses were applied and audited as such");
    for (const secret of [ADMIN_KEY, SECOND_KEY, sha256(ADMIN_KEY), fromConfig.key, ...keys]) assert.ok(!all.includes(secret));
  });

  test("the config's license is in the database and in force; issue-offline-license follows offlineAllowed and revocation", async () => {
    assert.equal((await verify(fromConfig.key)).status, 200);
    const offline = (await call("POST", "/v1/admin/licenses", licenseBody("airgap", { offlineAllowed: true }))).body;
    keys.push(offline.key);
    const issue = (id: string) => runCli(["beacon", "issue-offline-license", "--license", id, "--config", fixture.configPath]);
    const allowed = await issue("airgap");
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.match(allowed.stdout, /^ey/);
    const notAllowed = await issue("initech");
    assert.equal(notAllowed.code, 2);
    assert.match(notAllowed.stderr, /does not allow offline use/);
    await call("POST", "/v1/admin/licenses/airgap/revoke");
    assert.match((await issue("airgap")).stderr, /revoked/);
    assert.equal((await issue("acme-config")).code, 0, "a license of the file may be issued offline, as before");
  });
});
