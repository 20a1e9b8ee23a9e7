import assert from "node:assert/strict";
import { join } from "node:path";
import { afterEach, beforeEach, mock, test } from "node:test";
import pino from "pino";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { startPruning } from "../../src/sidecar/storage/pruning.ts";
import { StreamHealth } from "../../src/sidecar/storage/stream-health.ts";
import { MeasuresUnavailableError, type MeasuresSource } from "../../src/sidecar/usage/measures-source.ts";
import { UsageSnapshotter } from "../../src/sidecar/usage/snapshotter.ts";
import { SidecarReporter } from "../../src/a2a/sidecar-reporter.ts";
import { ReplicaBus } from "../../src/a2a/replica-bus.ts";
import { cancelElsewhere } from "../../src/a2a/replica-runs.ts";
import { ReplicaWatch } from "../../src/a2a/replica-watch.ts";
import type { RpcError } from "../../src/a2a/rpc-error.ts";
import type { TaskStore } from "../../src/a2a/task-store.ts";
import { SqliteTaskStore } from "../../src/a2a/task-store-sqlite.ts";
import { OfflineLicense } from "../../src/sidecar/license/offline-license.ts";
import { testLicense, usageMeasures } from "../helpers/fixtures.ts";
import { offlineLicenseFiles } from "../helpers/offline-license.ts";
import { tempDir } from "../helpers/processes.ts";
import { HOUR, MINUTE, SimulatedTime } from "../helpers/simulated-time.ts";

// The sidecar's other schedules, and the agent server's report loop, on simulated time: how often each acts per
// hour when what it depends on fails.

const silent = pino({ level: "silent" });
let time: SimulatedTime;
beforeEach(() => (time = SimulatedTime.start()));
afterEach(() => time.stop());

function snapshotter(source: MeasuresSource) {
  const outbox = new Outbox(tempDir(), { now: time.now });
  const s = new UsageSnapshotter({
    outbox,
    source,
    intervalMs: 24 * HOUR,
    retryMs: 5 * MINUTE, // retry.maxBackoff, as the daemon passes it
    logger: silent,
    health: new StreamHealth(silent, "usage", time.now),
    onEnqueued() {},
    now: time.now,
  });
  s.start();
  return { outbox, s };
}

test("usage snapshots: counts that cannot be read are asked again every retry.maxBackoff (12 an hour), not in a loop", async () => {
  let reads = 0;
  const { outbox, s } = snapshotter({
    name: "postgres",
    current: async () => {
      reads++;
      throw new MeasuresUnavailableError("connection refused");
    },
  });
  await time.advance(27 * HOUR, 10_000);
  // Nothing is read before the first window closes at 24 h; then one read per 5 min for 3 h.
  assert.ok(reads >= 35 && reads <= 37, `${reads} reads in 3 h of failure`);
  assert.equal(outbox.stats.counts("usage").pending, 0, "no made-up snapshot");
  await s.stop();
  outbox.close();
});

test("usage snapshots: readable counts make one snapshot per intervals.usageSnapshot and one read each", async () => {
  let reads = 0;
  const { outbox, s } = snapshotter({
    name: "push",
    current: async () => {
      reads++;
      return usageMeasures(1);
    },
  });
  await time.advance(72 * HOUR + MINUTE, 60_000);
  assert.equal(reads, 3);
  assert.equal(outbox.stats.counts("usage").pending, 3);
  await s.stop();
  outbox.close();
});

test("pruning runs once at start and then hourly, also while every round fails (a full disk)", async () => {
  let rounds = 0;
  const pruning = startPruning({
    outbox: {
      pruneCompleted: () => {
        rounds++;
        throw Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
      },
    },
    audit: { prune: () => 0 },
    keepCompletedMs: 7 * 24 * HOUR,
    keepAuditMs: 30 * 24 * HOUR,
    logger: silent,
    now: time.now,
  });
  await time.advance(5 * HOUR + MINUTE, 60_000);
  assert.equal(rounds, 6);
  pruning.close();
});

for (const [name, answer] of [
  ["500", async () => new Response("boom", { status: 500 })],
  ["200 instead of 202", async () => new Response("{}", { status: 200 })],
  [
    "an unreachable sidecar",
    async () => {
      throw new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } });
    },
  ],
] as [string, () => Promise<Response>][]) {
  test(`agent server: a sidecar answering ${name} gets one report per interval, and the runs are kept until a 202`, async () => {
    const store = new SqliteTaskStore(join(tempDir(), "tasks.db"), MINUTE);
    const posts: string[] = [];
    let respond = answer;
    // Unit test: fetch stands in for the sidecar; the reporter's metrics exporter goes elsewhere.
    const fetchMock = mock.method(globalThis, "fetch", async (url: string, init: RequestInit) => {
      if (String(url).endsWith("/v1/transactions")) posts.push(String(init.body));
      return respond();
    });
    const reporter = new SidecarReporter({
      sidecarUrl: "http://127.0.0.1:9",
      store,
      intervalMs: MINUTE,
      tenantId: crypto.randomUUID(),
      organizationId: crypto.randomUUID(),
      logger: silent,
      now: time.now,
    });
    reporter.start();
    const task = {
      id: crypto.randomUUID(),
      contextId: crypto.randomUUID(),
      kind: "task",
      status: { state: "completed", timestamp: "" },
    } as const;
    const lease = await store.create("notes", { ...task, status: { state: "submitted", timestamp: "" } } as never, time.now());
    assert.ok(await store.finish(task as never, lease, crypto.randomUUID(), time.now()));
    await time.advance(HOUR, 5_000);
    assert.ok(posts.length >= 58 && posts.length <= 61, `${posts.length} reports in an hour`);
    assert.equal(new Set(posts.map((p) => JSON.parse(p).trace_transactions[0].id)).size, 1, "every resend carries the same transaction id");
    respond = async () => new Response(JSON.stringify({ accepted: 1 }), { status: 202 });
    await time.advance(2 * MINUTE, 5_000);
    const delivered = posts.length;
    await time.advance(HOUR, 5_000);
    assert.equal(posts.length, delivered, "nothing left to report: no more requests");
    await reporter.stop().catch(() => {});
    fetchMock.mock.restore();
    await store.close();
  });
}

test("offline license: rechecked locally once a minute, so its expiry shows within a minute, with no request at all", async () => {
  time.stop(); // the files are issued by the real CLI, on real time
  const expiresAt = Date.parse("2026-11-01T00:30:00Z");
  const files = await offlineLicenseFiles(tempDir(), testLicense({ expiresAt: new Date(expiresAt).toISOString() }));
  time = SimulatedTime.start(Date.parse("2026-11-01T00:00:00Z"));
  const fetchMock = mock.method(globalThis, "fetch", async () => assert.fail("offline mode sends nothing"));
  const license = new OfflineLicense({ licenseFile: files.licenseFile, publicKeyFile: files.publicKeyFile });
  try {
    assert.equal((await license.start()).state, "valid");
    let invalidAt: number | undefined;
    for (let minute = 0; minute < 60 && invalidAt === undefined; minute++) {
      await time.advance(MINUTE, 10_000);
      // The check verifies a signature with WebCrypto, off the main thread: once past expiry, give it real turns to
      // land (a loaded machine may need many), without moving the clock.
      for (let turn = 0; turn < 5_000 && time.now() >= expiresAt && license.status().state !== "invalid"; turn++) await time.settle(1);
      if (license.status().state === "invalid") invalidAt = time.now();
    }
    assert.ok(invalidAt !== undefined && invalidAt >= expiresAt && invalidAt <= expiresAt + MINUTE, "invalid within a minute of expiry");
    assert.match(license.status().lastError!, /expired/);
    assert.equal(fetchMock.mock.callCount(), 0);
  } finally {
    await license.stop();
    fetchMock.mock.restore();
  }
});

for (const [name, failing] of [
  ["a healthy database", false],
  ["a database that refuses every query", true],
] as const) {
  test(`agent server replicas, ${name}: one heartbeat and one sweep every third of the timeout, never more`, async () => {
    let heartbeats = 0;
    let sweeps = 0;
    const store = {
      heartbeat: async () => {
        heartbeats++;
        if (failing) throw new Error("ECONNREFUSED");
      },
      failUnfinished: async () => {
        sweeps++;
        return 0;
      },
    } as unknown as TaskStore;
    const runs = { leases: () => [], lost: () => {} };
    const watch = new ReplicaWatch({ store, timeoutMs: 30_000, failed: (task) => task, runs, logger: silent, now: time.now });
    await watch.start();
    await time.advance(HOUR, 5_000);
    await watch.stop();
    // 3,600 s / 10 s, plus the round at start.
    assert.ok(heartbeats >= 360 && heartbeats <= 362, `${heartbeats} heartbeats in an hour`);
    assert.equal(sweeps, failing ? 0 : heartbeats, "a replica that cannot announce itself fails nobody's tasks");
  });
}

test("agent server replicas: following a run held elsewhere reads the database every 5 s when no notification comes, never more", async () => {
  const selects: number[] = [];
  const listener = { connect: async () => {}, on: () => {}, once: () => {}, query: async () => ({ rows: [] }), end: async () => {} };
  const setup = { query: async () => ({ rows: [{ secret: "s" }] }), release: () => {} }; // the bus's channel secret
  const pool = {
    connect: async () => setup,
    query: async (sql: string) => {
      if (sql.startsWith("SELECT seq")) selects.push(time.now());
      return { rows: [], rowCount: 0 };
    },
  } as unknown as import("pg").Pool;
  const running = { kind: "task", id: "t", contextId: "c", status: { state: "submitted", timestamp: "" } } as const;
  const store = { get: async () => ({ graphId: "g", task: running }) } as unknown as TaskStore;
  const bus = await ReplicaBus.open(pool, () => listener, silent);
  // The run never ends here: the follower's first event stays pending while the hour passes.
  void bus.follow("t", store)[Symbol.asyncIterator]().next();
  await time.advance(HOUR, 1_000);
  assert.ok(selects.length >= 715 && selects.length <= 722, `${selects.length} reads in an hour`);
});

test("agent server replicas: a cancel sent to another replica waits 10 s at most, reading the task ten times a second", async () => {
  let reads = 0;
  const running = { kind: "task", id: "t", contextId: "c", status: { state: "working", timestamp: "" } } as const;
  const store = {
    get: async () => {
      reads++;
      return { graphId: "g", task: running };
    },
  } as unknown as TaskStore;
  const bus = { requestCancel: async () => {} } as unknown as ReplicaBus;
  const outcome = cancelElsewhere(bus, store, "t", running as never).catch((err: RpcError) => err);
  await time.advance(15_000, 100);
  const err = await outcome;
  assert.equal((err as RpcError).code, -32603, "no answer from the replica running it: an error, not a hang");
  assert.ok(reads >= 100 && reads <= 102, `${reads} reads`);
});
