import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { beaconPaths } from "../../src/protocol/beacon-paths.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { freshDatabase, query } from "../helpers/postgres.ts";
import {
  agentConfig,
  beaconConfig,
  getJson,
  postJson,
  runCli,
  startAgentProcess,
  startBeacon,
  tempDir,
  waitFor,
  type BeaconFixture,
  type ServiceProcess,
} from "../helpers/processes.ts";
import { RoundRobinProxy } from "../helpers/round-robin-proxy.ts";

// Beacon replicas as a vendor runs them: real `egress-agent beacon` processes on one PostgreSQL database (the real
// server on 127.0.0.1:5432, a database of its own), one signing key (a file, as a mounted Secret), behind a
// round-robin balancer; real sidecars sending through it.

const acme = testLicense({ id: "acme-prod" });
const globex = testLicense({ id: "globex-prod" });
let databaseUrl: string;
let dropDatabase: () => Promise<void>;
const fixtures: BeaconFixture[] = [];
const replicas: ServiceProcess[] = [];
let balancer: RoundRobinProxy;

function signingKeyFile(): string {
  const path = join(tempDir("beacon-key-"), "signing-key.pem");
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  writeFileSync(path, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
  return path;
}

const startReplica = (fixture: BeaconFixture) => startBeacon(fixture, { BEACON_DATABASE_URL: databaseUrl });

before(async () => {
  const database = await freshDatabase("egress_replicas");
  databaseUrl = database.url;
  dropDatabase = database.drop;
  const key = signingKeyFile();
  for (let i = 0; i < 2; i++) fixtures.push(beaconConfig([acme, globex], { signingKeyFile: key }));
  // Started together, as a rollout starts them; one that fails must not leave the other running (the file would hang).
  const started = await Promise.allSettled(fixtures.map(startReplica));
  for (const result of started) if (result.status === "fulfilled") replicas.push(result.value);
  const failed = started.find((result) => result.status === "rejected");
  if (failed) throw failed.reason;
  balancer = await RoundRobinProxy.start(replicas.map((replica) => replica.url));
});

after(async () => {
  await balancer?.close();
  for (const replica of replicas) await replica.stop();
  await dropDatabase?.();
});

async function report(fixture: BeaconFixture): Promise<unknown> {
  const run = await runCli(["beacon", "report", "--config", fixture.configPath, "--json"], { env: { BEACON_DATABASE_URL: databaseUrl } });
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout);
}

test("a token one replica issued is taken by the other; the report is the same from either", async () => {
  const [one, two] = replicas as [ServiceProcess, ServiceProcess];
  const verified = await postJson(`${one.url}${beaconPaths.verify}`, { license: acme.key });
  assert.equal(verified.status, 200);
  const bearer = { authorization: `Bearer ${verified.body.token}` };
  const batch = traceTransactions(10);
  const ingested = await postJson(`${two.url}${beaconPaths.ingestTraces}`, { license: acme.key, trace_transactions: batch }, bearer);
  assert.deepEqual([ingested.status, ingested.body], [200, { inserted_count: 10 }]);
  const metrics = await postJson(`${two.url}${beaconPaths.metrics}`, { resourceMetrics: [] }, bearer);
  assert.equal(metrics.status, 200, JSON.stringify(metrics.body));
  assert.deepEqual(await report(fixtures[0]!), await report(fixtures[1]!));
});

test("the same batches sent to both replicas at once count once", async () => {
  const [one, two] = replicas as [ServiceProcess, ServiceProcess];
  const batches = Array.from({ length: 10 }, () => traceTransactions(100));
  const answers = await Promise.all(
    batches.flatMap((batch) =>
      [one, two].map((replica) =>
        postJson(`${replica.url}${beaconPaths.ingestTraces}`, { license: globex.key, trace_transactions: batch }),
      ),
    ),
  );
  for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const inserted = answers.reduce((total, answer) => total + answer.body.inserted_count, 0);
  assert.equal(inserted, 1_000, "1,000 ids, each counted by one replica");
  const [row] = await query<{ n: string }>(databaseUrl, "SELECT count(*) AS n FROM trace_transactions WHERE license_id = $1", [globex.id]);
  assert.equal(Number(row!.n), 1_000);
});

test("kill -9 of one replica while two sidecars keep sending: every transaction arrives, none counts twice", async () => {
  const sidecars = await Promise.all(
    [acme, globex].map((license) =>
      startAgentProcess(agentConfig(balancer.url, { limits: { batchTransactions: 50 } }), { PLATFORM_LICENSE_KEY: license.key }),
    ),
  );
  try {
    const sent = new Map<string, string[]>([
      [acme.id, []],
      [globex.id, []],
    ]);
    const before = await countFor([acme.id, globex.id]);
    const feed = async (sidecar: ServiceProcess, licenseId: string, rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        const batch = traceTransactions(100);
        const answer = await postJson(`${sidecar.url}/v1/transactions`, { trace_transactions: batch });
        assert.equal(answer.status, 202, JSON.stringify(answer.body));
        sent.get(licenseId)!.push(...batch.map((t) => t.id));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const feeding = Promise.all([feed(sidecars[0]!, acme.id, 30), feed(sidecars[1]!, globex.id, 30)]);
    // Once the beacon has some of this load, the first replica dies without a word.
    await waitFor(async () => (await countFor([acme.id, globex.id])) - before >= 500, 20_000, "deliveries under way");
    assert.equal(await replicas[0]!.stop("SIGKILL"), null);
    await feeding;

    for (const sidecar of sidecars) {
      await waitFor(
        async () => {
          const billing = (await getJson(`${sidecar.url}/v1/status`)).streams.billing;
          return billing.completed === 3_000 && billing.pending === 0 && billing.sending === 0 ? billing : undefined;
        },
        60_000,
        "each sidecar's 3,000 transactions delivered",
      );
    }
    for (const [licenseId, ids] of sent) {
      const [row] = await query<{ n: string }>(
        databaseUrl,
        "SELECT count(*) AS n FROM trace_transactions WHERE license_id = $1 AND id = ANY($2::uuid[])",
        [licenseId, ids],
      );
      assert.equal(Number(row!.n), 3_000, `${licenseId}: every sent id stored once`);
    }
    assert.ok((balancer.served.get(replicas[1]!.url) ?? 0) > 0, "the surviving replica took the load");
  } finally {
    for (const sidecar of sidecars) await sidecar.stop();
  }
});

async function countFor(licenseIds: string[]): Promise<number> {
  const [row] = await query<{ n: string }>(databaseUrl, "SELECT count(*) AS n FROM trace_transactions WHERE license_id = ANY($1)", [
    licenseIds,
  ]);
  return Number(row!.n);
}
