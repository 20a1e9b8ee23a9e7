import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { PostgresMeasures } from "../../src/sidecar/usage/measures-source.ts";
import { storedSnapshots } from "../helpers/beacon-db.ts";
import type { UsageMeasures } from "../../src/protocol/usage-snapshot.ts";
import { testLicense } from "../helpers/fixtures.ts";
import { freshDatabase, query } from "../helpers/postgres.ts";
import { agentConfig, beaconConfig, getJson, startAgentProcess, startBeacon, waitFor } from "../helpers/processes.ts";

// The real PostgreSQL server on 127.0.0.1:5432 (.ci/run starts it), a schema of our own per run.
const URL = "postgres://postgres@127.0.0.1:5432/test";
const schema = `egress_usage_${process.pid}`;
const measures = [
  "workspaces",
  "users",
  "projects",
  "experiments",
  "datasets",
  "evaluators",
  "run_rules",
  "annotation_queues",
  "prompts",
  "prompt_commits",
  "prompt_pulls",
  "active_pats_30d",
] as const;
let admin: pg.Client;

/** One table per measure, `n` rows in table i: the counts are 1..12. */
before(async () => {
  admin = new pg.Client({ connectionString: URL });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  for (const [i, measure] of measures.entries()) {
    await admin.query(
      `CREATE TABLE ${schema}.${measure} (id serial primary key); INSERT INTO ${schema}.${measure} SELECT FROM generate_series(1, ${i + 1})`,
    );
  }
});
after(async () => {
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.end();
});

const queries = (overrides: Partial<Record<(typeof measures)[number], string>> = {}) =>
  Object.fromEntries(measures.map((m) => [m, overrides[m] ?? `SELECT count(*) FROM ${schema}.${m}`])) as Record<
    keyof UsageMeasures,
    string
  >;

test("postgres source: one read-only query per measure gives the counts; a bad query, a write or a slow query gives none", async () => {
  const counts = await new PostgresMeasures({ url: URL, statementTimeoutMs: 2_000, queries: queries() }).current();
  assert.deepEqual(counts, Object.fromEntries(measures.map((m, i) => [m, i + 1])));

  const cases: [Partial<Record<(typeof measures)[number], string>>, RegExp][] = [
    [{ prompts: `SELECT count(*) FROM ${schema}.nope` }, /usage\.postgres\.queries\.prompts: 42P01/],
    [{ users: "SELECT 1, 2" }, /queries\.users: must return one row with one non-negative integer/],
    [{ users: "SELECT -3" }, /queries\.users: must return one row/],
    [{ datasets: `INSERT INTO ${schema}.datasets DEFAULT VALUES RETURNING 1` }, /queries\.datasets: 25006/], // read-only transaction
    [{ evaluators: "SELECT 1 FROM pg_sleep(2)" }, /queries\.evaluators: 57014/], // statement timeout
  ];
  for (const [override, message] of cases) {
    await assert.rejects(new PostgresMeasures({ url: URL, statementTimeoutMs: 300, queries: queries(override) }).current(), message);
  }
  const rows = await admin.query(`SELECT count(*) FROM ${schema}.datasets`);
  assert.equal(rows.rows[0].count, "5", "the write was refused");

  const password = "pa55-secret-word";
  await assert.rejects(
    new PostgresMeasures({ url: `postgres://nobody:${password}@127.0.0.1:1/test`, statementTimeoutMs: 500, queries: queries() }).current(),
    (err: Error) => /\(connect\)/.test(err.message) && !err.message.includes(password),
  );
});

test("postgres source: a measure of several statements is refused naming its key and runs none of them; one statement still works", async () => {
  const db = await freshDatabase("egress_usage");
  try {
    await query(db.url, "CREATE TABLE users (id int); INSERT INTO users VALUES (1), (2), (3)");
    const only = (users: string) =>
      Object.fromEntries(measures.map((m) => [m, m === "users" ? users : "SELECT 0"])) as Record<keyof UsageMeasures, string>;
    for (const users of [
      "SELECT 1; COMMIT; CREATE TABLE pwned (x int)",
      "COMMIT; CREATE TABLE pwned (x int); SELECT 1",
      "SELECT count(*) FROM users; COMMIT; DELETE FROM users",
    ]) {
      await assert.rejects(
        new PostgresMeasures({ url: db.url, statementTimeoutMs: 2_000, queries: only(users) }).current(),
        /^MeasuresUnavailableError: usage\.postgres\.queries\.users: must be a single read-only statement: 42601 /,
        users,
      );
    }
    // One statement that ends the transaction returns no count: the read stops there, the next measure never runs.
    const split = { ...only("COMMIT"), projects: "CREATE TABLE pwned (x int)" };
    await assert.rejects(
      new PostgresMeasures({ url: db.url, statementTimeoutMs: 2_000, queries: split }).current(),
      /queries\.users: must return one row/,
    );
    assert.deepEqual(await query(db.url, "SELECT to_regclass('pwned') AS pwned, (SELECT count(*)::int FROM users) AS users"), [
      { pwned: null, users: 3 },
    ]);
    const counts = await new PostgresMeasures({
      url: db.url,
      statementTimeoutMs: 2_000,
      queries: only("SELECT count(*) FROM users;"),
    }).current();
    assert.equal(counts.users, 3, "one statement, a trailing semicolon too");
  } finally {
    await db.drop();
  }
});

test("postgres source end to end: a failing query postpones the snapshot (no zero sent); once it works, the counts reach the beacon", async () => {
  const license = testLicense();
  const beaconFixture = beaconConfig([license]);
  const beacon = await startBeacon(beaconFixture);
  const fixture = agentConfig(beacon.url, {
    intervals: { flush: "50ms", usageSnapshot: "300ms" },
    selfTelemetry: { enabled: false },
    usage: {
      source: "postgres",
      postgres: { url: URL, statementTimeout: "2s", queries: queries({ prompt_pulls: `SELECT count(*) FROM ${schema}.later` }) },
    },
  });
  const agent = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: license.key });
  const snapshots = () => storedSnapshots(beaconFixture.dataDir);
  try {
    await waitFor(async () => /usage snapshot postponed/.test(agent.output()), 10_000, "a postponed snapshot");
    assert.deepEqual(snapshots(), [], "nothing is sent while a count is unknown");
    const status = await getJson(`${agent.url}/v1/status`);
    assert.match(status.streams.usage.lastError.message, /snapshot postponed: usage\.postgres\.queries\.prompt_pulls: 42P01/);
    await admin.query(`CREATE TABLE ${schema}.later (id int); INSERT INTO ${schema}.later VALUES (1), (2)`);
    const [first] = await waitFor(async () => (snapshots().length > 0 ? snapshots() : undefined), 10_000, "a snapshot at the beacon");
    assert.equal(first!.measures.prompt_pulls, 2);
    assert.equal(first!.measures.active_pats_30d, 12);
    assert.ok(!agent.output().includes("postgres://"), "the database URL is never logged");
  } finally {
    await agent.stop();
    await beacon.stop();
  }
});
