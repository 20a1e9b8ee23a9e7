import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import Database from "better-sqlite3";
import pino from "pino";
import { registerInstanceRoutes } from "../../src/beacon/admin/instances-routes.ts";
import { BeaconConfig } from "../../src/beacon/config.ts";
import { InstanceRecorder } from "../../src/beacon/instance-recorder.ts";
import type { InstanceSighting, InstanceStore } from "../../src/beacon/instances.ts";
import { openBeaconStorage, type BeaconStorage } from "../../src/beacon/storage.ts";
import { BeaconStore } from "../../src/beacon/store.ts";
import type { HttpRequest } from "../../src/http/exchange.ts";
import { HttpServer } from "../../src/http/server.ts";
import { traceTransactions } from "../helpers/fixtures.ts";
import { freshDatabase, query } from "../helpers/postgres.ts";
import { tempDir } from "../helpers/processes.ts";

const A = "3f0c2a8e-5b1d-4e7a-9c64-2d8b1f0e7a51";
const B = "b7e9d1c3-0a2f-4b6e-8d5c-1e3f7a9b2c40";
const ACME = { id: "acme-prod", seats: 5 };
const GLOBEX = { id: "globex", seats: 5 };
const T0 = new Date("2026-11-24T12:00:00.000Z");
const at = (hours: number) => new Date(T0.getTime() + hours * 3_600_000);
const sighting = (overrides: Partial<InstanceSighting> = {}): InstanceSighting => ({
  licenseId: "acme-prod",
  instanceId: A,
  version: "0.1.0",
  mode: "online",
  seenAt: T0,
  ...overrides,
});

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const engines: { name: string; open(): Promise<BeaconStorage> }[] = [
  { name: "sqlite", open: () => openBeaconStorage(BeaconConfig.parse({ dataDir: tempDir("beacon-instances-") })) },
  {
    name: "postgresql",
    async open() {
      const database = await freshDatabase("egress_instances");
      cleanups.push(database.drop);
      return openBeaconStorage(BeaconConfig.parse({ dataDir: tempDir(), database: { url: database.url } }));
    },
  },
];

for (const engine of engines) {
  describe(`instances on ${engine.name}`, () => {
    const opened = async () => {
      const store = await engine.open();
      cleanups.push(() => store.close());
      return store;
    };

    test("an upsert keeps the first first-seen and the last last-seen; version and mode are the latest sighting's", async () => {
      const { instances } = await opened();
      await instances.recordInstance(sighting({ seenAt: at(1) }));
      await instances.recordInstance(sighting({ seenAt: at(5), version: "0.2.0" }));
      // Late news (an older sighting, an import of an older export) moves first seen back and changes nothing else.
      await instances.recordInstance(sighting({ seenAt: at(0), version: "0.0.9", mode: "offline" }));
      // A sighting whose User-Agent did not say keeps the version known.
      await instances.recordInstance(sighting({ seenAt: at(6), version: null }));
      assert.deepEqual(await instances.instances(), [
        {
          instanceId: A,
          licenseId: "acme-prod",
          version: "0.2.0",
          mode: "online",
          firstSeenAt: at(0).toISOString(),
          lastSeenAt: at(6).toISOString(),
        },
      ]);
    });

    test("instances per license, most recently seen first; counts per license, active since a time", async () => {
      const { instances } = await opened();
      await instances.recordInstance(sighting({ seenAt: at(1) }));
      await instances.recordInstance(sighting({ instanceId: B, seenAt: at(30) }));
      await instances.recordInstance(sighting({ licenseId: "globex", seenAt: at(2) }));
      assert.deepEqual(
        (await instances.instances()).map((i) => [i.licenseId, i.instanceId]),
        [
          ["acme-prod", B],
          ["globex", A],
          ["acme-prod", A],
        ],
        "the same instance id under two licenses is two instances",
      );
      assert.deepEqual(
        (await instances.instances({ licenseId: "acme-prod" })).map((i) => i.instanceId),
        [B, A],
      );
      assert.deepEqual(await instances.instances({ licenseId: "nobody" }), []);
      assert.deepEqual(
        (await instances.instances({ limit: 2, offset: 1 })).map((i) => [i.licenseId, i.instanceId]),
        [
          ["globex", A],
          ["acme-prod", A],
        ],
        "a page: the next most recently seen",
      );
      assert.deepEqual(
        await instances.instanceCounts(at(2)),
        new Map([
          ["acme-prod", { total: 2, active: 1 }],
          ["globex", { total: 1, active: 1 }],
        ]),
      );
    });

    test("past the cap a new instance is not stored; a known one is still updated; the hour moves on", async () => {
      const { instances } = await opened();
      const ids = Array.from({ length: 5 }, () => randomUUID());
      const capAt = (hours: number) => ({ max: 3, since: at(hours - 1) });
      const stored = [];
      for (const instanceId of ids) stored.push(await instances.recordInstance(sighting({ instanceId, seenAt: at(0) }), capAt(0)));
      assert.deepEqual(stored, [true, true, true, false, false]);
      const known = await instances.recordInstance(sighting({ instanceId: ids[0], seenAt: at(0.5), version: "0.2.0" }), capAt(0.5));
      assert.equal(known, true, "a known instance past the cap");
      assert.equal(await instances.recordInstance(sighting({ licenseId: "globex", seenAt: at(0.5) }), capAt(0.5)), true, "another license");
      const acme = await instances.instances({ licenseId: "acme-prod" });
      assert.deepEqual(
        acme.map((i) => [i.instanceId, i.version, i.lastSeenAt]),
        [
          [ids[0], "0.2.0", at(0.5).toISOString()],
          ...ids
            .slice(1, 3)
            .sort()
            .map((id) => [id, "0.1.0", at(0).toISOString()]),
        ],
      );
      // An hour after the first three, the window holds none of them.
      assert.equal(await instances.recordInstance(sighting({ instanceId: ids[3], seenAt: at(1.01) }), capAt(1.01)), true);
    });

    test("a flood of made-up instance ids from one license stops at its hourly cap; its sidecars are still seen", async () => {
      const storage = await opened();
      let now = T0.getTime();
      let refused = 0;
      const warned: unknown[] = [];
      const log = { warn: (fields: unknown) => warned.push(fields) };
      const request = (id: string) =>
        ({ headers: { "x-egress-instance-id": id, "user-agent": "egress-agent/0.1.0 (online)" }, log }) as unknown as HttpRequest;
      const recorder = new InstanceRecorder(storage.instances, { now: () => now, onRefused: () => refused++ });
      const license = { id: "acme-prod", seats: 5 }; // 10 new an hour
      await recorder.seen(request(A), license);
      for (let i = 0; i < 300; i++) await recorder.seen(request(randomUUID()), license);
      assert.equal((await storage.instances.instanceCounts(T0)).get("acme-prod")?.total, 10);
      assert.equal(refused, 291);
      assert.equal(warned.length, 1, "one log line a minute, not one a refusal");
      now += 61_000;
      await recorder.seen(request(A), license);
      const [sidecar] = await storage.instances.instances({ licenseId: "acme-prod", limit: 1 });
      assert.deepEqual([sidecar?.instanceId, sidecar?.lastSeenAt], [A, new Date(now).toISOString()]);
      await recorder.seen(request(randomUUID()), { id: "globex", seats: 1 });
      assert.equal((await storage.instances.instanceCounts(T0)).get("globex")?.total, 1, "another license is not held back");
    });
  });
}

test("sqlite: a beacon.db of schema 4 gains the instances table at start, its rows kept", () => {
  const dir = tempDir("beacon-v4-");
  const kept = traceTransactions(2);
  const v4 = new BeaconStore(dir);
  v4.insertTransactions("acme-prod", kept, T0);
  v4.close();
  const db = new Database(join(dir, "beacon.db"));
  db.exec("DROP TABLE instances; PRAGMA user_version = 4");
  db.close();
  const upgraded = new BeaconStore(dir);
  try {
    assert.deepEqual([...upgraded.transactionAttempts().keys()].sort(), kept.map((t) => t.id).sort());
    assert.deepEqual(upgraded.traceReport().length, 1);
  } finally {
    upgraded.close();
  }
  const check = new Database(join(dir, "beacon.db"), { readonly: true });
  assert.equal(check.pragma("user_version", { simple: true }), 5);
  assert.deepEqual(check.prepare("SELECT count(*) AS n FROM instances").get(), { n: 0 });
  check.close();
});

test("postgresql: a database of schema 1 gains the instances table at start, its rows kept", async () => {
  const database = await freshDatabase("egress_instances");
  cleanups.push(database.drop);
  const config = BeaconConfig.parse({ database: { url: database.url } });
  const v1 = await openBeaconStorage(config);
  await v1.ingest([{ licenseId: "acme-prod", transactions: traceTransactions(3) }], T0);
  await v1.close();
  await query(database.url, "DROP TABLE instances");
  await query(database.url, "UPDATE beacon_schema SET version = 1");
  const upgraded = await openBeaconStorage(config);
  try {
    await upgraded.instances.recordInstance(sighting());
    assert.equal((await upgraded.instances.instances()).length, 1);
    assert.equal((await upgraded.traceReport())[0]?.transactions, 3);
  } finally {
    await upgraded.close();
  }
  assert.deepEqual(await query(database.url, "SELECT version FROM beacon_schema"), [{ version: 2 }]);
});

describe("InstanceRecorder", () => {
  /** A store that counts its writes, and fails while `failing`. */
  const counting = () => {
    const writes: InstanceSighting[] = [];
    const store = {
      failing: false as boolean,
      async recordInstance(s: InstanceSighting) {
        if (store.failing) throw new Error("database away");
        writes.push(s);
        return true;
      },
      instances: async () => [],
      instanceCounts: async () => new Map(),
    } satisfies InstanceStore & { failing: boolean };
    return { store, writes };
  };
  const warnings: string[] = [];
  const request = (headers: Record<string, string>) =>
    ({ headers, log: { warn: (_: unknown, message: string) => warnings.push(message) } }) as unknown as HttpRequest;
  const agent = (version: string) => ({ "x-egress-instance-id": A, "user-agent": `egress-agent/${version} (online)` });

  test("writes one sighting per instance a minute; an upgrade at once; a header in capitals is the same instance", async () => {
    let now = T0.getTime();
    const { store, writes } = counting();
    const recorder = new InstanceRecorder(store, { now: () => now });
    for (let i = 0; i < 100; i++) await recorder.seen(request(agent("0.1.0")), ACME);
    await recorder.seen(request({ ...agent("0.1.0"), "x-egress-instance-id": A.toUpperCase() }), ACME);
    assert.equal(writes.length, 1);
    assert.deepEqual(writes[0], { licenseId: "acme-prod", instanceId: A, version: "0.1.0", mode: "online", seenAt: T0 });
    now += 59_000;
    await recorder.seen(request(agent("0.1.0")), ACME);
    assert.equal(writes.length, 1, "within the minute");
    await recorder.seen(request(agent("0.2.0")), ACME);
    assert.equal(writes.length, 2, "a new version is written at once");
    now += 1_000;
    await recorder.seen(request(agent("0.1.0")), ACME);
    assert.equal(writes.length, 3, "a minute after the first");
    await recorder.seen(request(agent("0.1.0")), GLOBEX);
    assert.equal(writes.length, 4, "another license");
  });

  test("no header, a header that is not a UUID: nothing written; an unknown User-Agent: no version, online", async () => {
    const { store, writes } = counting();
    const recorder = new InstanceRecorder(store, { now: () => T0.getTime() });
    await recorder.seen(request({}), ACME);
    await recorder.seen(request({ "x-egress-instance-id": "not-a-uuid" }), ACME);
    await recorder.seen(request({ "x-egress-instance-id": `${A}x` }), ACME);
    assert.equal(writes.length, 0);
    await recorder.seen(request({ "x-egress-instance-id": B, "user-agent": "curl/8.5.0" }), ACME);
    assert.deepEqual([writes[0]?.version, writes[0]?.mode], [null, "online"]);
  });

  test("a failed write is logged, not thrown, and tried again at the next request", async () => {
    const { store, writes } = counting();
    const recorder = new InstanceRecorder(store, { now: () => T0.getTime() });
    store.failing = true;
    await recorder.seen(request(agent("0.1.0")), ACME);
    assert.deepEqual(warnings, ["instance sighting not recorded"]);
    store.failing = false;
    await recorder.seen(request(agent("0.1.0")), ACME);
    assert.equal(writes.length, 1);
  });
});

test("GET /v1/admin/instances: active until admin.silentAfter (default 26 h) has passed without a sighting, then silent", async (t) => {
  const storage = await openBeaconStorage(BeaconConfig.parse({ dataDir: tempDir("beacon-silent-") }));
  t.after(() => storage.close());
  await storage.instances.recordInstance(sighting({ seenAt: T0 }));
  await storage.instances.recordInstance(sighting({ instanceId: B, licenseId: "globex", seenAt: at(20) }));
  let now = at(25);
  const states = async (base: string, query = "") => {
    const response = await fetch(`${base}/v1/admin/instances${query}`);
    assert.equal(response.status, 200);
    const body = (await response.json()) as { instances: { instanceId: string; state: string; firstSeenAt: string }[] };
    return Object.fromEntries(body.instances.map((i) => [i.instanceId, i.state]));
  };
  const serve = async (silentAfterMs?: number) => {
    const server = new HttpServer({ logger: pino({ level: "silent" }), bodyLimit: { bytes: 1024 } });
    registerInstanceRoutes(server, { store: storage.instances, now: () => now.getTime(), silentAfterMs });
    t.after(() => server.close());
    return server.listen({ host: "127.0.0.1", port: 0 });
  };
  const byDefault = await serve();
  assert.deepEqual(await states(byDefault), { [A]: "active", [B]: "active" });
  now = at(26);
  assert.deepEqual(await states(byDefault), { [A]: "active", [B]: "active" }, "26 h to the millisecond is still active");
  now = at(26.01);
  assert.deepEqual(await states(byDefault), { [A]: "silent", [B]: "active" });
  assert.deepEqual(await states(byDefault, "?license=globex"), { [B]: "active" });
  const shorter = await serve(3_600_000);
  assert.deepEqual(await states(shorter), { [A]: "silent", [B]: "silent" });

  const bad = await fetch(`${byDefault}/v1/admin/instances?license=${encodeURIComponent("no spaces")}`);
  assert.equal(bad.status, 422);
  assert.deepEqual(((await bad.json()) as { detail: { loc: string[] }[] }).detail[0]?.loc, ["query", "license"]);
});

test("GET /v1/admin/instances pages: 500 unless ?limit= says (10,000 at most), from ?offset=, with the total", async (t) => {
  const storage = await openBeaconStorage(BeaconConfig.parse({ dataDir: tempDir("beacon-pages-") }));
  t.after(() => storage.close());
  // 600 instances, the i-th seen i minutes after T0: the newest first is 599, 598, ...
  for (let i = 0; i < 600; i++) {
    const instanceId = `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;
    await storage.instances.recordInstance(
      sighting({ instanceId, licenseId: i % 2 ? "globex" : "acme-prod", seenAt: new Date(T0.getTime() + i * 60_000) }),
    );
  }
  const server = new HttpServer({ logger: pino({ level: "silent" }), bodyLimit: { bytes: 1024 } });
  registerInstanceRoutes(server, { store: storage.instances, now: () => at(1).getTime() });
  t.after(() => server.close());
  const base = await server.listen({ host: "127.0.0.1", port: 0 });
  const get = async (query: string) => {
    const response = await fetch(`${base}/v1/admin/instances${query}`);
    return { status: response.status, body: (await response.json()) as any };
  };
  const numbers = (body: { instances: { instanceId: string }[] }) => body.instances.map((i) => Number(i.instanceId.slice(-12)));

  const first = await get("");
  assert.deepEqual([first.body.instances.length, first.body.total, first.body.limit, first.body.offset], [500, 600, 500, 0]);
  assert.deepEqual(numbers(first.body).slice(0, 2), [599, 598]);
  const rest = await get("?offset=500");
  assert.deepEqual([numbers(rest.body).length, numbers(rest.body)[0], rest.body.total], [100, 99, 600]);
  assert.deepEqual(numbers((await get("?limit=3&offset=10")).body), [589, 588, 587]);
  const globex = await get("?license=globex&limit=2");
  assert.deepEqual([numbers(globex.body), globex.body.total], [[599, 597], 300]);
  assert.deepEqual((await get("?license=nobody")).body, { instances: [], total: 0, limit: 500, offset: 0 });
  assert.equal((await get("?limit=10000")).body.instances.length, 600);

  for (const [query, field] of [
    ["?limit=0", "limit"],
    ["?limit=10001", "limit"],
    ["?limit=ten", "limit"],
    ["?offset=-1", "offset"],
  ]) {
    const bad = await get(query as string);
    assert.equal(bad.status, 422, query);
    assert.deepEqual(bad.body.detail[0]?.loc, ["query", field], query);
  }
});
