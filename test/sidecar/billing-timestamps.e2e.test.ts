import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { beaconPaths } from "../../src/protocol/beacon-paths.ts";
import { beaconRows } from "../helpers/beacon-db.ts";
import { FaultProxy } from "../helpers/fault-proxy.ts";
import { testLicense, traceTransaction, usageMeasures } from "../helpers/fixtures.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import {
  agentConfig,
  beaconConfig,
  getJson,
  postJson,
  runCli,
  startAgentProcess,
  startBeacon,
  waitFor,
  type ServiceProcess,
} from "../helpers/processes.ts";

// Platforms write their times with offsets (Python's isoformat() writes +00:00): the real sidecar takes them, sends
// them as UTC `Z` and the real beacon stores that, on both of its engines, as the same instants.

const license = testLicense();

/** One five-minute transaction as a platform writes its times, and the UTC text each must arrive as. */
const written = [
  {
    what: "Python's isoformat(), with microseconds",
    times: ["2026-11-01T10:00:00.123456+00:00", "2026-11-01T10:05:00.654321+00:00"],
    utc: ["2026-11-01T10:00:00.123456Z", "2026-11-01T10:05:00.654321Z"],
  },
  {
    what: "-05:00",
    times: ["2026-11-01T05:00:00-05:00", "2026-11-01T05:05:00-05:00"],
    utc: ["2026-11-01T10:00:00.000Z", "2026-11-01T10:05:00.000Z"],
  },
  {
    what: "fractions with +05:30",
    times: ["2026-11-01T15:30:00.5+05:30", "2026-11-01T15:35:00.25+05:30"],
    utc: ["2026-11-01T10:00:00.500Z", "2026-11-01T10:05:00.250Z"],
  },
  {
    what: "Python's str(), November locally but October in UTC",
    times: ["2026-11-01 00:30:00+01:00", "2026-11-01 00:35:00+01:00"],
    utc: ["2026-10-31T23:30:00.000Z", "2026-10-31T23:35:00.000Z"],
  },
];

const TIME_FIELDS = ["start_insertion_time", "end_insertion_time", "start_interval_time", "end_interval_time"] as const;

const transactionWith = ([start, end]: string[]) =>
  traceTransaction({ start_insertion_time: start, end_insertion_time: end, start_interval_time: start, end_interval_time: end });

/** The four times of a transaction, in field order. */
const timesOf = (t: Record<string, unknown>) => TIME_FIELDS.map((f) => t[f]);

for (const engine of ["SQLite", "PostgreSQL"] as const) {
  describe(`timestamps with offsets, sidecar to beacon on ${engine}`, () => {
    const stops: (() => Promise<unknown>)[] = [];
    after(async () => {
      for (const stop of stops.reverse()) await stop();
    });

    async function start() {
      const database = engine === "PostgreSQL" ? await freshDatabase("egress_timestamps") : undefined;
      if (database) stops.push(database.drop);
      const env = database ? { BEACON_DATABASE_URL: database.url } : {};
      const fixture = beaconConfig([license]);
      const beacon = await startBeacon(fixture, env);
      stops.push(() => beacon.stop());
      return { fixture, beacon, env, stored: { dataDir: fixture.dataDir, databaseUrl: database?.url } };
    }

    test("transactions timed with +00:00, -05:00 and fractional offsets are accepted, sent and stored as the same instants in Z", async () => {
      const { fixture, beacon, env, stored } = await start();
      const proxy = await FaultProxy.start(beacon.url);
      stops.push(() => proxy.close());
      const agent: ServiceProcess = await startAgentProcess(agentConfig(proxy.url), { PLATFORM_LICENSE_KEY: license.key });
      stops.push(() => agent.stop());

      const batch = written.map((w) => transactionWith(w.times));
      const first = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch });
      assert.deepEqual([first.status, first.body], [202, { accepted: 4, duplicates: 0 }]);
      const inZ = batch.map((t, i) => ({ ...t, ...transactionWith(written[i]!.utc), id: t.id, session_id: t.session_id }));
      const again = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: inZ });
      assert.deepEqual([again.status, again.body], [202, { accepted: 4, duplicates: 4 }], "the same ids, their times in Z: held once");
      await waitFor(
        async () => {
          const billing = (await getJson(`${agent.url}/v1/status`)).streams.billing;
          return billing.completed === 4 && billing.pending === 0 && billing.sending === 0;
        },
        20_000,
        "4 delivered",
      );

      const sent = proxy.requests(beaconPaths.ingestTraces).flatMap((r) => r.body.trace_transactions);
      assert.deepEqual(
        sent.map((t: Record<string, unknown>) => [t.id, timesOf(t)]),
        batch.map((t, i) => [t.id, [written[i]!.utc[0], written[i]!.utc[1], written[i]!.utc[0], written[i]!.utc[1]]]),
        "each sent once, its times in UTC Z",
      );
      const rows = await beaconRows<Record<string, string>>(`SELECT session_id, ${TIME_FIELDS.join(", ")} FROM trace_transactions`, stored);
      const bySession = new Map(rows.map((row) => [row.session_id, timesOf(row)]));
      for (const [i, t] of batch.entries()) {
        const [start, end] = written[i]!.utc;
        assert.deepEqual(bySession.get(t.session_id), [start, end, start, end], written[i]!.what);
      }
      const report = await runCli(["beacon", "report", "--json", "--config", fixture.configPath], { env });
      assert.equal(report.code, 0, report.stderr);
      assert.deepEqual(
        JSON.parse(report.stdout)
          .map((r: { month: string; transactions: number }) => [r.month, Number(r.transactions)])
          .sort(),
        [
          ["2026-10", 1],
          ["2026-11", 3],
        ],
        "billed in the month of its UTC instant",
      );
    });

    test("a usage snapshot's range in any offset is stored in Z: one row per window however written, a microsecond apart is another", async () => {
      const { beacon, stored } = await start();
      const send = (from: string, to: string) =>
        postJson(`${beacon.url}${beaconPaths.usageSnapshot}`, {
          license_key: license.key,
          from_timestamp: from,
          to_timestamp: to,
          measures: usageMeasures(2),
        });
      assert.deepEqual((await send("2026-11-01T01:00:00+01:00", "2026-11-01 19:00:00-05:00")).body, { inserted_count: 1 });
      assert.deepEqual((await send("2026-11-01T00:00:00Z", "2026-11-02T00:00:00.000+00:00")).body, { inserted_count: 0 });
      assert.deepEqual((await send("2026-11-01T00:00:00Z", "2026-11-02T00:00:00.000001Z")).body, { inserted_count: 1 });
      const naive = await send("2026-11-01T00:00:00", "2026-11-02T00:00:00Z");
      assert.equal(naive.status, 422);
      assert.deepEqual(naive.body.detail[0].loc, ["body", "from_timestamp"]);
      const rows = await beaconRows<{ from_timestamp: string; to_timestamp: string }>(
        "SELECT from_timestamp, to_timestamp FROM usage_snapshots",
        stored,
      );
      assert.deepEqual(rows.map((r) => [r.from_timestamp, r.to_timestamp]).sort(), [
        ["2026-11-01T00:00:00.000Z", "2026-11-02T00:00:00.000001Z"],
        ["2026-11-01T00:00:00.000Z", "2026-11-02T00:00:00.000Z"],
      ]);
    });
  });
}
