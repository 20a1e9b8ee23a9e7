import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { beaconPaths } from "../../src/protocol/beacon-paths.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { freshDatabase, query } from "../helpers/postgres.ts";
import {
  agentConfig,
  beaconConfig,
  getJson,
  postJson,
  startAgentProcess,
  startBeacon,
  waitFor,
  type ServiceProcess,
} from "../helpers/processes.ts";

// A real beacon on the real PostgreSQL (127.0.0.1:5432, a database of its own). The wire schema now refuses every
// record known to break a store, so a record the database refuses all the same is made by a trigger added here:
// whatever the next such record is, it must fail its own batch only, never another license's that shared its commit.

const acme = testLicense({ id: "acme-prod" });
const globex = testLicense({ id: "globex-prod" });
let databaseUrl: string;
let dropDatabase: () => Promise<void>;
let beacon: ServiceProcess;

before(async () => {
  const database = await freshDatabase("egress_group_commit");
  databaseUrl = database.url;
  dropDatabase = database.drop;
  beacon = await startBeacon(beaconConfig([acme, globex]), { BEACON_DATABASE_URL: databaseUrl });
  await query(
    databaseUrl,
    `CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF NEW.transaction_type = 'poison' THEN RAISE EXCEPTION 'a record this database cannot hold'; END IF;
       RETURN NEW;
     END $$`,
  );
  await query(
    databaseUrl,
    "CREATE TRIGGER refuse_poison BEFORE INSERT ON trace_transactions FOR EACH ROW EXECUTE FUNCTION refuse_poison()",
  );
});

after(async () => {
  await beacon?.stop();
  await dropDatabase?.();
});

test("a batch the database refuses fails alone: another license's concurrent batches all succeed, each counted once", async () => {
  const url = `${beacon.url}${beaconPaths.ingestTraces}`;
  const valid = Array.from({ length: 100 }, () => traceTransactions(10));
  const poisoned = Array.from({ length: 100 }, () => [...traceTransactions(9), ...traceTransactions(1, { transaction_type: "poison" })]);
  // Interleaved and all at once, so that most commit groups hold both licenses' batches.
  const answers = await Promise.all(
    valid.flatMap((batch, i) => [
      postJson(url, { license: globex.key, trace_transactions: batch }),
      postJson(url, { license: acme.key, trace_transactions: poisoned[i] }),
    ]),
  );
  const validAnswers = answers.filter((_, i) => i % 2 === 0);
  const poisonedAnswers = answers.filter((_, i) => i % 2 === 1);
  assert.deepEqual(
    validAnswers.map((a) => [a.status, a.body]),
    valid.map(() => [200, { inserted_count: 10 }]),
    "every valid batch stored, whatever it shared a commit with",
  );
  assert.deepEqual(new Set(poisonedAnswers.map((a) => a.status)), new Set([500]), "each poisoned batch fails, as a whole");
  const rows = await query<{ license_id: string; n: string }>(
    databaseUrl,
    "SELECT license_id, count(*) AS n FROM trace_transactions GROUP BY license_id",
  );
  assert.deepEqual(
    rows.map((r) => [r.license_id, Number(r.n)]),
    [[globex.id, 1_000]],
    "nothing of a poisoned batch stored",
  );
  // A resend of the valid batches counts nothing twice.
  const resent = await Promise.all(valid.slice(0, 10).map((batch) => postJson(url, { license: globex.key, trace_transactions: batch })));
  assert.deepEqual(
    resent.map((a) => a.body),
    valid.slice(0, 10).map(() => ({ inserted_count: 0 })),
  );
});

test("a real sidecar isolates the record this beacon cannot store: every other record is delivered, that one dead-lettered", async () => {
  const sidecar = await startAgentProcess(agentConfig(beacon.url, { limits: { batchTransactions: 10 } }), {
    PLATFORM_LICENSE_KEY: acme.key,
  });
  try {
    const batch = traceTransactions(50);
    batch[23] = { ...batch[23]!, transaction_type: "poison" };
    const accepted = await postJson(`${sidecar.url}/v1/transactions`, { trace_transactions: batch });
    assert.equal(accepted.status, 202, "the schema passes it: only this database refuses it");
    const billing = await waitFor(
      async () => {
        const { streams } = await getJson(`${sidecar.url}/v1/status`);
        return streams.billing.completed + streams.billing.failed === 50 && streams.billing;
      },
      60_000,
      "every record settled",
    );
    assert.deepEqual([billing.completed, billing.failed, billing.pending], [49, 1, 0]);
    assert.equal(billing.deadLetters[0].recordId, batch[23]!.id);
    assert.match(billing.deadLetters[0].error, /^beacon answered 500 .*\(alone, 3 times, while other records were delivered\)$/);
    const [row] = await query<{ n: string }>(databaseUrl, "SELECT count(*) AS n FROM trace_transactions WHERE license_id = $1", [acme.id]);
    assert.equal(Number(row!.n), 49);
  } finally {
    await sidecar.stop();
  }
});
