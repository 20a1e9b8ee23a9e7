import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import pino from "pino";
import packageJson from "../../package.json" with { type: "json" };
import { registerInstanceRoutes } from "../../src/beacon/admin/instances-routes.ts";
import { BeaconConfig } from "../../src/beacon/config.ts";
import { openBeaconStorage, type BeaconStorage } from "../../src/beacon/storage.ts";
import { HttpError } from "../../src/errors.ts";
import { HttpServer } from "../../src/http/server.ts";
import { ExportHeader } from "../../src/protocol/instance.ts";
import { storedSnapshots, storedTransactions } from "../helpers/beacon-db.ts";
import { FaultProxy } from "../helpers/fault-proxy.ts";
import { testLicense, traceTransactions, usageMeasures } from "../helpers/fixtures.ts";
import {
  agentConfig,
  beaconConfig,
  postJson,
  runCli,
  startAgentProcess,
  startBeacon,
  waitFor,
  type ServiceProcess,
} from "../helpers/processes.ts";
import { beaconResources, postOtlp, taggedRequest } from "../helpers/telemetry.ts";

// A real sidecar against a real beacon (through a recording proxy): every request names the instance, and the
// beacon's instances table, read through the admin route and the `beacon instances` command, shows it.

const license = testLicense();
const env = { PLATFORM_LICENSE_KEY: license.key };
const ADMIN_KEY = "admin-key-for-the-instances-test";
const USER_AGENT = `egress-agent/${packageJson.version} (online)`;
const fast = { intervals: { flush: "50ms", usageSnapshot: "400ms" }, selfTelemetry: { enabled: false } };

describe("instances: a real sidecar against a real beacon", () => {
  let beacon: ServiceProcess;
  let beaconFixture: ReturnType<typeof beaconConfig>;
  let proxy: FaultProxy;
  let storage: BeaconStorage;
  let admin: HttpServer;
  let adminUrl: string;

  before(async () => {
    beaconFixture = beaconConfig([license]);
    beacon = await startBeacon(beaconFixture);
    proxy = await FaultProxy.start(beacon.url);
    // The admin route over the beacon's own database, as the admin listener serves it, with an X-Api-Key check.
    storage = await openBeaconStorage(BeaconConfig.parse({ dataDir: beaconFixture.dataDir }), { readonly: true });
    admin = new HttpServer({ logger: pino({ level: "silent" }), bodyLimit: { bytes: 1024 * 1024 } });
    registerInstanceRoutes(admin, {
      store: storage.instances,
      now: Date.now,
      authorize: (request) => {
        if (request.headers["x-api-key"] !== ADMIN_KEY) throw new HttpError("EGRESS_ERR_API_KEY_INVALID", "wrong admin key");
        return true;
      },
    });
    adminUrl = await admin.listen({ host: "127.0.0.1", port: 0 });
  });
  after(async () => {
    await admin?.close();
    await storage?.close();
    await proxy?.close();
    await beacon?.stop();
  });

  const listed = async () => {
    const shown = await runCli(["beacon", "instances", "--url", adminUrl, "--json"], { env: { BEACON_ADMIN_API_KEY: ADMIN_KEY } });
    assert.equal(shown.code, 0, shown.stderr);
    return JSON.parse(shown.stdout).instances as { instanceId: string; licenseId: string; version: string; mode: string; state: string }[];
  };
  const instanceIdOf = (dataDir: string) => readFileSync(join(dataDir, "instance-id"), "utf8").trim();

  test("every request of every stream carries the instance id and User-Agent; the beacon lists the instance; a restart keeps the id, a second data dir gets another", async () => {
    const first = agentConfig(proxy.url, fast);
    let agent = await startAgentProcess(first, env);
    const batch = traceTransactions(3);
    try {
      assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch })).status, 202);
      assert.equal((await postJson(`${agent.url}/v1/usage/measures`, usageMeasures(2))).status, 202);
      for (const signal of ["metrics", "traces", "logs"] as const) {
        assert.equal((await postOtlp(agent.url, signal, taggedRequest(signal, "instances"))).status, 200);
      }
      await waitFor(() => batch.every((t) => storedTransactions(beaconFixture.dataDir).has(t.id)), 10_000, "billing delivered");
      await waitFor(() => storedSnapshots(beaconFixture.dataDir).length > 0, 10_000, "a usage snapshot delivered");
      for (const signal of ["metrics", "traces", "logs"] as const) {
        await waitFor(() => beaconResources(beaconFixture.dataDir, signal, "instances").length > 0, 10_000, `${signal} delivered`);
      }
    } finally {
      assert.equal(await agent.stop(), 0);
    }
    const id = instanceIdOf(first.dataDir);
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, "a UUID v4");
    const paths = new Set(proxy.seen.map((seen) => seen.path));
    for (const path of ["verify", "ingest-traces", "usage-snapshot", "v1/metrics", "v1/traces", "v1/logs"]) {
      assert.ok(paths.has(`/v1/beacon/${path}`), `a ${path} request was sent`);
    }
    for (const seen of proxy.seen) {
      assert.deepEqual([seen.headers["x-egress-instance-id"], seen.headers["user-agent"]], [id, USER_AGENT], seen.path);
    }
    assert.deepEqual(
      (await listed()).map(({ instanceId, licenseId, version, mode, state }) => ({ instanceId, licenseId, version, mode, state })),
      [{ instanceId: id, licenseId: license.id, version: packageJson.version, mode: "online", state: "active" }],
    );

    // Restarted on the same data dir: the same instance, not a second one.
    const sentBefore = proxy.seen.length;
    agent = await startAgentProcess(first, env);
    try {
      const more = traceTransactions(2);
      assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: more })).status, 202);
      await waitFor(() => more.every((t) => storedTransactions(beaconFixture.dataDir).has(t.id)), 10_000, "delivered after the restart");
    } finally {
      assert.equal(await agent.stop(), 0);
    }
    assert.equal(instanceIdOf(first.dataDir), id);
    assert.ok(proxy.seen.length > sentBefore);
    for (const seen of proxy.seen.slice(sentBefore)) assert.equal(seen.headers["x-egress-instance-id"], id);
    assert.deepEqual(
      (await listed()).map((i) => i.instanceId),
      [id],
    );

    // Online export names the instance and the license of the cached verification.
    const exported = await runCli(["export", "--since", "2000-01-01", "--config", first.configPath], { env });
    assert.equal(exported.code, 0, exported.stderr);
    const header = ExportHeader.parse(JSON.parse(exported.stdout.split("\n")[0]!));
    assert.deepEqual([header.instance_id, header.license_id, header.mode], [id, license.id, "online"]);

    // Another data dir is another instance.
    const second = agentConfig(proxy.url, fast);
    agent = await startAgentProcess(second, env);
    try {
      const theirs = traceTransactions(1);
      assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: theirs })).status, 202);
      await waitFor(() => storedTransactions(beaconFixture.dataDir).has(theirs[0]!.id), 10_000, "the second sidecar's record");
    } finally {
      assert.equal(await agent.stop(), 0);
    }
    const otherId = instanceIdOf(second.dataDir);
    assert.notEqual(otherId, id);
    assert.deepEqual(new Set((await listed()).map((i) => i.instanceId)), new Set([id, otherId]));

    const table = await runCli(["beacon", "instances", "--url", adminUrl], { env: { BEACON_ADMIN_API_KEY: ADMIN_KEY } });
    assert.match(table.stdout, /^INSTANCE\s+LICENSE\s+VERSION\s+MODE\s+STATE\s+FIRST SEEN\s+LAST SEEN$/m);
    assert.match(
      table.stdout,
      new RegExp(`^${otherId}\\s+${license.id}\\s+${packageJson.version.replaceAll(".", "\\.")}\\s+online\\s+active\\s`, "m"),
    );
  });

  test("requests without the header, or with one that is not a UUID, are served as ever and recorded nowhere", async () => {
    const before = await listed();
    const verified = await postJson(`${beacon.url}/v1/beacon/verify`, { license: license.key });
    assert.equal(verified.status, 200);
    const bearer = { authorization: `Bearer ${verified.body.token}` };
    const plain = await postJson(
      `${beacon.url}/v1/beacon/ingest-traces`,
      { license: license.key, trace_transactions: traceTransactions(1) },
      bearer,
    );
    assert.deepEqual([plain.status, plain.body], [200, { inserted_count: 1 }]);
    const malformed = await postJson(
      `${beacon.url}/v1/beacon/ingest-traces`,
      { license: license.key, trace_transactions: traceTransactions(1) },
      { ...bearer, "x-egress-instance-id": "not-a-uuid", "user-agent": USER_AGENT },
    );
    assert.deepEqual([malformed.status, malformed.body], [200, { inserted_count: 1 }]);
    assert.deepEqual(await listed(), before, "nothing recorded");
  });

  test("beacon instances: a wrong key is a clear 401, a missing one a usage error, an unreachable admin API says so", async () => {
    const wrong = await runCli(["beacon", "instances", "--url", adminUrl], { env: { BEACON_ADMIN_API_KEY: "not-the-key" } });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /EGRESS_ERR_ADMIN_ANSWER/);
    assert.match(wrong.stderr, /401/);
    assert.doesNotMatch(wrong.stderr, /not-the-key/);
    const missing = await runCli(["beacon", "instances", "--url", adminUrl], { env: { BEACON_ADMIN_API_KEY: "" } });
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /BEACON_ADMIN_API_KEY or give --api-key-file/);
    const nowhere = await runCli(["beacon", "instances", "--url", "http://127.0.0.1:4"], { env: { BEACON_ADMIN_API_KEY: ADMIN_KEY } });
    assert.equal(nowhere.code, 1);
    assert.match(nowhere.stderr, /EGRESS_ERR_ADMIN_UNREACHABLE/);
  });
});
