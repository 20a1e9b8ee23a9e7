import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { beaconPaths } from "../../src/protocol/beacon-paths.ts";
import { testLicense } from "../helpers/fixtures.ts";
import { TestCollector } from "../helpers/otlp-collector.ts";
import { freshDatabase, query } from "../helpers/postgres.ts";
import { beaconConfig, postJson, startBeacon, tempDir, waitFor, type ServiceProcess } from "../helpers/processes.ts";
import { promValue, taggedRequest } from "../helpers/telemetry.ts";

// Two beacon replicas on one PostgreSQL database (the real server on 127.0.0.1:5432), both forwarding to one
// collector: the forward queue is shared, and each batch is claimed by one replica (SKIP LOCKED), so a backlog is
// forwarded once, by both replicas side by side.

const license = testLicense();
/** Requests the collector has begun to receive and not yet answered. */
const pendingRequests = (): number => collector.inFlight;
let collector: TestCollector;
let databaseUrl: string;
let dropDatabase: () => Promise<void>;
const replicas: ServiceProcess[] = [];

before(async () => {
  collector = await TestCollector.start();
  const database = await freshDatabase("egress_forward");
  databaseUrl = database.url;
  dropDatabase = database.drop;
  const key = join(tempDir("beacon-key-"), "signing-key.pem");
  writeFileSync(key, generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }), {
    mode: 0o600,
  });
  const forward = { endpoint: collector.url, retry: { minBackoff: "50ms", maxBackoff: "200ms" } };
  for (let i = 0; i < 2; i++) {
    replicas.push(
      await startBeacon(beaconConfig([license], { signingKeyFile: key, telemetry: { forward } }), { BEACON_DATABASE_URL: databaseUrl }),
    );
  }
});

after(async () => {
  for (const replica of replicas) await replica.stop();
  await collector?.down();
  await dropDatabase?.();
});

test("a backlog of 400 batches stored through both replicas is forwarded by both, each batch once", async (t) => {
  const [one, two] = replicas as [ServiceProcess, ServiceProcess];
  const { body } = await postJson(`${one.url}${beaconPaths.verify}`, { license: license.key });
  const bearer = { authorization: `Bearer ${body.token}` };
  await collector.down(); // a backlog first, so that both replicas find work when the collector is back
  const markers = Array.from({ length: 400 }, (_, i) => `batch-${i}`);
  for (const [i, marker] of markers.entries()) {
    const signal = i % 2 ? "logs" : "traces";
    const stored = await postJson(`${(i % 4 < 2 ? one : two).url}${beaconPaths[signal]}`, taggedRequest(signal, marker), bearer);
    assert.equal(stored.status, 200);
  }
  assert.deepEqual(await query(databaseUrl, "SELECT count(*)::int AS queued FROM forward_queue"), [{ queued: 400 }]);
  collector.delayMs = 100; // a remote collector's round trip: a replica's round takes a while, the other claims beside it
  await collector.up();
  await waitFor(
    async () => (await promValue(one.url, "egress_beacon_forward_backlog_batches")) === 0 || undefined,
    30_000,
    "an empty backlog",
  );

  const seen = new Map<string, number>();
  for (const signal of ["traces", "logs"] as const) {
    const field = signal === "traces" ? "resourceSpans" : "resourceLogs";
    for (const arrival of collector.arrivals.filter((a) => a.path === `/v1/${signal}`)) {
      for (const entry of arrival.body[field]) {
        const marker = entry.resource.attributes.find((a: any) => a.key === "env").value.stringValue;
        seen.set(marker, (seen.get(marker) ?? 0) + 1);
      }
    }
  }
  assert.deepEqual(
    markers.filter((m) => seen.get(m) !== 1),
    [],
    "every batch forwarded exactly once",
  );
  const forwarded = async (replica: ServiceProcess) =>
    (await promValue(replica.url, 'egress_beacon_forward_batches_total{signal="traces"}')) +
    (await promValue(replica.url, 'egress_beacon_forward_batches_total{signal="logs"}'));
  const [byOne, byTwo] = [await forwarded(one), await forwarded(two)];
  assert.equal(byOne + byTwo, 400);
  assert.ok(byOne > 0 && byTwo > 0, `both replicas forwarded (${byOne} and ${byTwo})`);
  t.diagnostic(`forwarded by replica one: ${byOne}, by replica two: ${byTwo}; requests: ${collector.requests}`);
});

test("a replica killed while it forwards: its claimed batches are released and the other replica sends them (at least once)", async (t) => {
  const [one, two] = replicas as [ServiceProcess, ServiceProcess];
  const { body } = await postJson(`${two.url}${beaconPaths.verify}`, { license: license.key });
  const bearer = { authorization: `Bearer ${body.token}` };
  await collector.down();
  const markers = Array.from({ length: 300 }, (_, i) => `killed-${i}`);
  for (const marker of markers)
    assert.equal((await postJson(`${two.url}${beaconPaths.logs}`, taggedRequest("logs", marker), bearer)).status, 200);
  const before = collector.arrivals.length;
  collector.delayMs = 2_000; // each request in flight long enough to kill a replica during it
  await collector.up();
  await waitFor(() => pendingRequests() >= 2, 10_000, "both replicas sending");
  await one.stop("SIGKILL");
  collector.delayMs = 0;
  await waitFor(
    async () => (await promValue(two.url, "egress_beacon_forward_backlog_batches")) === 0 || undefined,
    30_000,
    "an empty backlog",
  );
  const seen = new Map<string, number>();
  for (const arrival of collector.arrivals.slice(before).filter((a) => a.path === "/v1/logs")) {
    for (const entry of arrival.body.resourceLogs) {
      const marker = entry.resource.attributes.find((a: any) => a.key === "env").value.stringValue;
      seen.set(marker, (seen.get(marker) ?? 0) + 1);
    }
  }
  assert.deepEqual(
    markers.filter((m) => !seen.has(m)),
    [],
    "every batch arrived",
  );
  const twice = markers.filter((m) => seen.get(m)! > 1).length;
  t.diagnostic(`${twice} of ${markers.length} batches arrived twice`);
  assert.ok(twice <= 100, `${twice} batches arrived twice: at most the killed replica's one claim`);
});
