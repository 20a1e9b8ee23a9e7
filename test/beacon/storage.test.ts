import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { BeaconConfig } from "../../src/beacon/config.ts";
import { openBeaconStorage, type BeaconStorage } from "../../src/beacon/storage.ts";
import { EgressError } from "../../src/errors.ts";
import { ORG_ID, OTHER_ORG_ID, traceTransaction, traceTransactions, usageMeasures } from "../helpers/fixtures.ts";
import { freshDatabase, query } from "../helpers/postgres.ts";
import { tempDir } from "../helpers/processes.ts";

// One suite, both engines: what the beacon stores and answers must not depend on which one a vendor runs.
// PostgreSQL is the real server on 127.0.0.1:5432, a database of its own per test.

interface Engine {
  name: string;
  /** A new, empty store location, and a function that opens a store (a replica) on it. */
  location(): Promise<{ open(): Promise<BeaconStorage> }>;
}

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup();
});

const engines: Engine[] = [
  {
    name: "sqlite",
    location: async () => {
      const dataDir = tempDir("beacon-storage-");
      return { open: () => openBeaconStorage(BeaconConfig.parse({ dataDir })) };
    },
  },
  {
    name: "postgresql",
    location: async () => {
      const database = await freshDatabase("egress_beacon");
      cleanups.push(database.drop);
      return { open: () => openBeaconStorage(BeaconConfig.parse({ dataDir: tempDir(), database: { url: database.url } })) };
    },
  },
];

const NOW = new Date("2026-11-24T12:00:00Z");

for (const engine of engines) {
  describe(`beacon storage on ${engine.name}`, () => {
    async function opened(): Promise<{ store: BeaconStorage; open(): Promise<BeaconStorage> }> {
      const location = await engine.location();
      const store = await location.open();
      cleanups.push(() => store.close());
      return { store, open: location.open };
    }

    test("an id counts once per license: a resend, a differently cased id and a duplicate inside a batch are skipped", async () => {
      const { store } = await opened();
      const batch = traceTransactions(3);
      assert.deepEqual(await store.ingest([{ licenseId: "acme", transactions: batch }], NOW), [3]);
      assert.deepEqual(await store.ingest([{ licenseId: "acme", transactions: batch }], NOW), [0], "a resend");
      const upper = { ...batch[0]!, id: batch[0]!.id.toUpperCase() };
      const fresh = traceTransaction();
      assert.deepEqual(await store.ingest([{ licenseId: "acme", transactions: [upper, fresh, fresh] }], NOW), [1]);
      assert.deepEqual(await store.ingest([{ licenseId: "globex", transactions: batch }], NOW), [3], "another license's ids are its own");
      const report = await store.traceReport();
      assert.deepEqual(
        report.map((row) => [row.license_id, row.transactions, row.traces]),
        [
          ["acme", 4, 28],
          ["globex", 3, 21],
        ],
      );
    });

    test("an offline import is one transaction read batch by batch: counted once with what came online, all or nothing", async () => {
      const { store } = await opened();
      const online = traceTransactions(2);
      await store.ingest([{ licenseId: "acme", transactions: online }], NOW);
      const file = [...online, ...traceTransactions(5)];
      const inBatches = () => [file.slice(0, 3), file.slice(3)];
      assert.equal(await store.importTransactions("acme", inBatches, NOW), 5, "the two that came online are not new");
      assert.equal(await store.importTransactions("acme", inBatches, NOW), 0, "the same file again");
      // A read that fails half-way (the scratch file unreadable, the database gone) keeps none of its batches.
      const more = traceTransactions(4);
      function* failing() {
        yield more.slice(0, 2);
        throw new Error("read failed");
      }
      await assert.rejects(store.importTransactions("acme", failing, NOW), /read failed/);
      assert.deepEqual(
        (await store.traceReport()).map((row) => row.transactions),
        [7],
      );
    });

    test("several licenses' batches in one call: each batch's own count, in the order given", async () => {
      const { store } = await opened();
      const shared = traceTransactions(2);
      await store.ingest([{ licenseId: "zeta", transactions: shared }], NOW);
      const counts = await store.ingest(
        [
          { licenseId: "zeta", transactions: [...shared, traceTransaction()] },
          { licenseId: "alpha", transactions: shared },
          { licenseId: "mid", transactions: [] },
        ],
        NOW,
      );
      assert.deepEqual(counts, [1, 2, 0]);
    });

    test("the report: per month of the interval start, license and organization, with each filter", async () => {
      const { store } = await opened();
      await store.ingest(
        [
          {
            licenseId: "acme",
            transactions: [
              traceTransaction({ trace_count: 5 }),
              traceTransaction({ trace_count: 6, organization_id: OTHER_ORG_ID }),
              traceTransaction({ trace_count: 1, start_interval_time: "2026-12-01T00:00:00Z" }),
            ],
          },
          { licenseId: "globex", transactions: [traceTransaction({ trace_count: 100 })] },
        ],
        NOW,
      );
      const months = (rows: Awaited<ReturnType<BeaconStorage["traceReport"]>>) =>
        rows.map((row) => [row.month, row.license_id, row.organization_id, row.transactions, row.traces]);
      assert.deepEqual(months(await store.traceReport()), [
        ["2026-11", "acme", OTHER_ORG_ID, 1, 6],
        ["2026-11", "acme", ORG_ID, 1, 5],
        ["2026-11", "globex", ORG_ID, 1, 100],
        ["2026-12", "acme", ORG_ID, 1, 1],
      ]);
      assert.deepEqual(months(await store.traceReport({ month: "2026-12" })), [["2026-12", "acme", ORG_ID, 1, 1]]);
      assert.deepEqual(months(await store.traceReport({ licenseId: "globex" })), [["2026-11", "globex", ORG_ID, 1, 100]]);
      assert.deepEqual(months(await store.traceReport({ licenseId: "acme", organizationId: OTHER_ORG_ID })), [
        ["2026-11", "acme", OTHER_ORG_ID, 1, 6],
      ]);
    });

    test("usage snapshots count once per license and window; telemetry batches are kept as received", async () => {
      const { store } = await opened();
      const from = "2026-11-24T00:00:00.000Z";
      const to = "2026-11-24T01:00:00.000Z";
      assert.equal(await store.insertUsageSnapshot("acme", from, to, usageMeasures(3), NOW), 1);
      assert.equal(await store.insertUsageSnapshot("acme", from, to, usageMeasures(4), NOW), 0);
      assert.equal(await store.insertUsageSnapshot("globex", from, to, usageMeasures(5), NOW), 1);
      const snapshots = await store.usageSnapshots();
      assert.deepEqual(
        snapshots.map((s) => [s.license_id, s.measures.users]),
        [
          ["acme", 3],
          ["globex", 5],
        ],
      );
      const later = ["2026-11-24T01:00:00.000Z", "2026-11-24T02:00:00.000Z", "2026-11-24T03:00:00.000Z"];
      for (const [i, start] of later.entries()) {
        await store.insertUsageSnapshot("acme", start, later[i + 1] ?? "2026-11-24T04:00:00.000Z", usageMeasures(10 + i), NOW);
      }
      assert.deepEqual(
        (await store.usageSnapshots({ licenseId: "acme", newest: 2 })).map((s) => [s.license_id, s.from_timestamp]),
        [
          ["acme", "2026-11-24T03:00:00.000Z"],
          ["acme", "2026-11-24T02:00:00.000Z"],
        ],
        "one license's, newest first, at most `newest`",
      );
      const body = { resourceMetrics: [{ scopeMetrics: [] }] };
      await store.insertOtlp("metrics", "acme", 7, JSON.stringify(body), NOW);
      await store.insertOtlp("logs", "acme", 1, JSON.stringify({ resourceLogs: [] }), NOW);
      assert.deepEqual(await store.otlpBatches("metrics"), [{ signal: "metrics", license_id: "acme", item_count: 7, body }]);
      assert.equal((await store.otlpBatches()).length, 2);
      // A request parsing left unchanged is stored as the text it came as (its key order, its spacing): every reader
      // (the forwarder's queue, otlpBatches) gets that text, or what it parses to, as for a serialised one.
      const text = '{ "resourceLogs": [{"scopeLogs": [], "resource": {"droppedAttributesCount": 0, "attributes": []}}] }';
      await store.insertOtlp("logs", "acme", 1, text, NOW, true);
      assert.deepEqual((await store.otlpBatches("logs")).at(-1)!.body, JSON.parse(text));
      const queued = await store.forwardQueue.round(10, async ({ batches }) => batches.map((b) => b.body));
      assert.deepEqual(queued, [text]);
      assert.equal((await store.forwardQueue.backlog()).bytes, Buffer.byteLength(text));
    });

    test("two stores on one location (two replicas), sending the same batches at once, count every id once", async () => {
      const { store, open } = await opened();
      const replica = await open();
      cleanups.push(() => replica.close());
      const batches = Array.from({ length: 20 }, () => traceTransactions(50));
      const results = await Promise.all(
        batches.flatMap((batch) => [
          store.ingest([{ licenseId: "acme", transactions: batch }], NOW),
          // The same rows in the other order, and beside another license's: no two transactions wait on each other.
          replica.ingest(
            [
              { licenseId: "globex", transactions: batch.slice(0, 5) },
              { licenseId: "acme", transactions: [...batch].reverse() },
            ],
            NOW,
          ),
        ]),
      );
      const acme = results.reduce((total, counts, i) => total + (i % 2 === 0 ? counts[0]! : counts[1]!), 0);
      assert.equal(acme, 1_000, "each of the 1,000 ids counted by exactly one replica");
      const report = await replica.traceReport({ licenseId: "acme" });
      assert.deepEqual([report[0]!.transactions, report[0]!.traces], [1_000, 7_000]);
    });

    test("a store opened again on the same location finds what was stored, and counts nothing twice", async () => {
      const { store, open } = await opened();
      const batch = traceTransactions(4);
      await store.ingest([{ licenseId: "acme", transactions: batch }], NOW);
      const again = await open();
      cleanups.push(() => again.close());
      assert.deepEqual(await again.ingest([{ licenseId: "acme", transactions: batch }], NOW), [0]);
      assert.equal((await again.traceReport())[0]!.transactions, 4);
    });
  });
}

test("postgresql: an unreachable server or unknown database is EGRESS_ERR_DATABASE naming database.url, password hidden", async () => {
  for (const url of ["postgres://beacon:s3cret-pw@127.0.0.1:4/beacon", "postgres://postgres:s3cret-pw@127.0.0.1:5432/no_such_db_4711"]) {
    await assert.rejects(openBeaconStorage(BeaconConfig.parse({ database: { url } })), (err: unknown) => {
      assert.ok(err instanceof EgressError, String(err));
      assert.equal(err.code, "EGRESS_ERR_DATABASE");
      assert.match(err.message, /database\.url/);
      assert.doesNotMatch(err.message, /s3cret-pw/);
      return true;
    });
  }
});

test("postgresql: a schema newer than this beacon is refused, and left as it was", async () => {
  const database = await freshDatabase("egress_beacon");
  cleanups.push(database.drop);
  const config = BeaconConfig.parse({ database: { url: database.url } });
  await (await openBeaconStorage(config)).close();
  await query(database.url, "UPDATE beacon_schema SET version = 99");
  await assert.rejects(openBeaconStorage(config), {
    code: "EGRESS_ERR_BEACON_SCHEMA",
    message: /schema version 99, newer than this beacon/,
  });
  assert.deepEqual(await query(database.url, "SELECT version FROM beacon_schema"), [{ version: 99 }]);
});

test("postgresql: replicas starting at once on an empty database create the schema once", async () => {
  const database = await freshDatabase("egress_beacon");
  cleanups.push(database.drop);
  const config = BeaconConfig.parse({ database: { url: database.url } });
  const stores = await Promise.all(Array.from({ length: 4 }, () => openBeaconStorage(config)));
  for (const store of stores) await store.close();
  assert.deepEqual(await query(database.url, "SELECT version FROM beacon_schema"), [{ version: 2 }]);
});

test("postgresql: a database of schema 1 (before licenses were kept in it) is upgraded in place, its rows kept", async () => {
  const database = await freshDatabase("egress_beacon");
  cleanups.push(database.drop);
  const config = BeaconConfig.parse({ database: { url: database.url } });
  const first = await openBeaconStorage(config);
  await first.ingest([{ licenseId: "acme", transactions: traceTransactions(2) }], NOW);
  await first.close();
  await query(
    database.url,
    "DROP TABLE licenses; DROP TABLE license_version; DROP TABLE admin_audit; UPDATE beacon_schema SET version = 1",
  );
  const upgraded = await openBeaconStorage(config);
  try {
    assert.deepEqual(await query(database.url, "SELECT version FROM beacon_schema"), [{ version: 2 }]);
    assert.equal((await upgraded.traceReport())[0]?.transactions, 2);
    assert.deepEqual(await upgraded.licenses.all(), []);
  } finally {
    await upgraded.close();
  }
});
