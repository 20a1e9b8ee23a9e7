import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { beaconPaths } from "../../src/protocol/beacon-paths.ts";
import { testLicense, traceTransaction, traceTransactions, usageMeasures } from "../helpers/fixtures.ts";
import { freshDatabase, query } from "../helpers/postgres.ts";
import { beaconConfig, postJson, startBeacon, type ServiceProcess } from "../helpers/processes.ts";
import { assertValidation, beaconStored } from "./harness.ts";
import { startPair, stopPair, type Pair } from "./setup.ts";

// Poison records: values a database column cannot hold as sent (past a 32-bit integer, a NUL, any control character,
// a lone surrogate, unbounded text). The wire schema refuses each one, with the same 422 on the SQLite beacon and the
// PostgreSQL beacon (the real server on 127.0.0.1:5432), and neither stores anything of the request. The sidecar's
// intake refuses them too, with the same field path, since both ends share the schema.

const MAX_INT32 = 2 ** 31 - 1;
const license = testLicense();

/** A bad value for one field of the fourth transaction of five, with the `type` of the 422 it gets. */
const poisons: [string, Record<string, unknown>, string][] = [
  ["num_failed_send_attempts", { num_failed_send_attempts: MAX_INT32 + 1 }, "too_big"],
  ["trace_count", { trace_count: MAX_INT32 + 1 }, "too_big"],
  ["status", { status: "completed\u0000" }, "custom"],
  ["status", { status: "\u0000" }, "custom"],
  ["transaction_type", { transaction_type: "tra\u0007ces" }, "custom"],
  ["transaction_type", { transaction_type: "traces\u0085" }, "custom"],
  ["status", { status: "completed\ud800" }, "custom"],
  ["status", { status: "c".repeat(129) }, "too_big"],
  ["start_insertion_time", { start_insertion_time: `2026-11-01T10:00:00.${"1".repeat(60)}Z` }, "too_big"],
];
const poisonedBatch = (field: Record<string, unknown>) => {
  const batch: Record<string, unknown>[] = traceTransactions(5);
  batch[3] = { ...batch[3], ...field };
  return batch;
};

describe("poison records on both beacon engines", () => {
  const beacons: { name: string; beacon: ServiceProcess; stored(): Promise<number[]> }[] = [];
  let dropDatabase: (() => Promise<void>) | undefined;

  before(async () => {
    const sqlite = beaconConfig([license]);
    const database = await freshDatabase("egress_poison");
    dropDatabase = database.drop;
    const [onSqlite, onPostgres] = await Promise.all([
      startBeacon(sqlite),
      startBeacon(beaconConfig([license]), { BEACON_DATABASE_URL: database.url }),
    ]);
    const count = async (table: string) => Number((await query<{ n: string }>(database.url, `SELECT count(*) AS n FROM ${table}`))[0]!.n);
    beacons.push(
      { name: "sqlite", beacon: onSqlite!, stored: async () => Object.values(beaconStored(sqlite.dataDir)) },
      {
        name: "postgresql",
        beacon: onPostgres!,
        stored: async () => Promise.all(["trace_transactions", "otlp_batches", "usage_snapshots"].map(count)),
      },
    );
  });
  after(async () => {
    for (const { beacon } of beacons) {
      assert.equal(await beacon.stop("SIGTERM"), 0);
      assert.ok(!beacon.output().includes('"msg":"request failed"'), "no request ended in a 500");
    }
    await dropDatabase?.();
  });

  /** The answers of both engines to one request, after asserting they are the same. */
  async function onBoth(path: string, body: unknown) {
    const answers = [];
    for (const { name, beacon, stored } of beacons) {
      const before = await stored();
      const answer = await postJson(`${beacon.url}${path}`, body);
      if (answer.status === 422) assert.deepEqual(await stored(), before, `${name}: a refused request stores nothing`);
      answers.push(answer);
    }
    assert.deepEqual(answers[1]!.body, answers[0]!.body, "both engines answer alike");
    assert.equal(answers[1]!.status, answers[0]!.status);
    return answers[0]!;
  }

  for (const [field, value, type] of poisons) {
    test(`${field} ${JSON.stringify(Object.values(value)[0]).slice(0, 40)}: 422 at the field on both, nothing stored`, async () => {
      const answer = await onBoth(beaconPaths.ingestTraces, { license: license.key, trace_transactions: poisonedBatch(value) });
      assertValidation(answer, ["body", "trace_transactions", 3, field], type);
    });
  }

  test("a license key with a control character or over 1,024 characters is refused on every route that takes one", async () => {
    const snapshot = { from_timestamp: "2026-11-01T00:00:00+00:00", to_timestamp: "2026-11-02T00:00:00+00:00", measures: usageMeasures() };
    for (const key of [`${license.key}\u0000`, "k".repeat(1025)]) {
      assertValidation(await onBoth(beaconPaths.verify, { license: key }), ["body", "license"]);
      assertValidation(await onBoth(beaconPaths.ingestTraces, { license: key, trace_transactions: [] }), ["body", "license"]);
      assertValidation(await onBoth(beaconPaths.usageSnapshot, { license_key: key, ...snapshot }), ["body", "license_key"]);
    }
  });

  test("the largest values the schema takes are stored by both engines alike", async () => {
    const edge = traceTransaction({
      trace_count: MAX_INT32,
      num_failed_send_attempts: MAX_INT32,
      status: `${"c".repeat(127)}é`,
      transaction_type: "traces \u{1F600}",
      start_insertion_time: "2026-11-01T10:00:00.123456789Z",
    });
    const answer = await onBoth(beaconPaths.ingestTraces, { license: license.key, trace_transactions: [edge] });
    assert.deepEqual([answer.status, answer.body], [200, { inserted_count: 1 }]);
  });
});

describe("poison records at the sidecar's intake", () => {
  let pair: Pair;
  before(async () => {
    pair = await startPair();
  });
  after(() => stopPair(pair));

  test("the same poison records are 422 at the same field path, and nothing is queued", async () => {
    for (const [field, value, type] of poisons) {
      const answer = await postJson(`${pair.agent.url}/v1/transactions`, { trace_transactions: poisonedBatch(value) });
      assertValidation(answer, ["body", "trace_transactions", 3, field], type);
    }
    const status = (await (await fetch(`${pair.agent.url}/v1/status`)).json()) as any;
    assert.deepEqual(
      [status.streams.billing.pending, status.streams.billing.sending, status.streams.billing.completed],
      [0, 0, 0],
      "nothing of the refused requests queued",
    );
  });
});
