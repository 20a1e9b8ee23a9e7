import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { beaconPaths } from "../../src/protocol/beacon-paths.ts";
import { ADMIN_KEY, admin, adminUrlOf } from "../helpers/beacon-admin.ts";
import { ORG_ID, testLicense } from "../helpers/fixtures.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { beaconConfig, postJson, startBeacon, tempDir, waitFor, type ServiceProcess } from "../helpers/processes.ts";

// Two real beacon replicas on one PostgreSQL database (the real server on 127.0.0.1:5432): a license changed
// through one replica's admin listener is in force on the other within 5 s, with no restart.

let dropDatabase: () => Promise<void>;
const replicas: ServiceProcess[] = [];

before(async () => {
  const database = await freshDatabase("egress_admin_replicas");
  dropDatabase = database.drop;
  const keyPath = join(tempDir("beacon-key-"), "signing-key.pem");
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  writeFileSync(keyPath, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
  const config = () => beaconConfig([testLicense({ id: "from-config" })], { signingKeyFile: keyPath, admin: { listen: "127.0.0.1:0" } });
  const env = { BEACON_DATABASE_URL: database.url, BEACON_ADMIN_API_KEY: ADMIN_KEY };
  // Started together: two replicas applying the same beacon.yaml at once must not clash.
  replicas.push(...(await Promise.all([startBeacon(config(), env), startBeacon(config(), env)])));
});

after(async () => {
  for (const replica of replicas) assert.equal(await replica.stop(), 0);
  await dropDatabase?.();
});

/** How long until `probe` holds, in ms; fails past 5 s. */
async function within5s(probe: () => Promise<boolean>, what: string): Promise<number> {
  const started = Date.now();
  await waitFor(probe, 5000, what);
  return Date.now() - started;
}

test("created on replica A, verified on replica B; revoked on B, refused on A; renewed and rotated likewise, each within 5 s", async () => {
  const [a, b] = replicas as [ServiceProcess, ServiceProcess];
  const verifyOn = (replica: ServiceProcess, key: string) => postJson(`${replica.url}${beaconPaths.verify}`, { license: key });
  const expiresAt = new Date(Date.now() + 400 * 24 * 3600 * 1000).toISOString();

  const created = await admin(adminUrlOf(a), "POST", "/v1/admin/licenses", { id: "acme", organizationId: ORG_ID, expiresAt, seats: 5 });
  assert.equal(created.status, 201);
  const key = created.body.key as string;
  const createMs = await within5s(async () => (await verifyOn(b, key)).status === 200, "B to take the key A created");

  const token = (await verifyOn(b, key)).body.token as string;
  assert.equal((await admin(adminUrlOf(b), "POST", "/v1/admin/licenses/acme/revoke")).status, 200);
  const revokeMs = await within5s(
    async () => (await verifyOn(a, key)).body.code === "EGRESS_ERR_LICENSE_REVOKED",
    "A to refuse the key B revoked",
  );
  const ingest = await postJson(
    `${a.url}${beaconPaths.ingestTraces}`,
    { license: key, trace_transactions: [] },
    { authorization: `Bearer ${token}` },
  );
  assert.deepEqual([ingest.status, ingest.body.code], [403, "EGRESS_ERR_LICENSE_REVOKED"], "its token too, on the other replica");

  // The list on either replica shows the same state, and both applied beacon.yaml's license once.
  const listA = (await admin(adminUrlOf(a), "GET", "/v1/admin/licenses")).body;
  assert.deepEqual(listA, (await admin(adminUrlOf(b), "GET", "/v1/admin/licenses")).body);
  assert.deepEqual(
    listA.licenses.map((l: { id: string; state: string }) => [l.id, l.state]),
    [
      ["acme", "revoked"],
      ["from-config", "active"],
    ],
  );

  const other = await admin(adminUrlOf(a), "POST", "/v1/admin/licenses", { id: "globex", organizationId: ORG_ID, expiresAt, seats: 5 });
  await within5s(async () => (await verifyOn(b, other.body.key)).status === 200, "B to take globex");
  const rotated = await admin(adminUrlOf(b), "POST", "/v1/admin/licenses/globex/rotate-key");
  const rotateMs = await within5s(async () => (await verifyOn(a, other.body.key)).status === 403, "A to refuse the old key");
  assert.equal((await verifyOn(a, rotated.body.key)).status, 200);
  await admin(adminUrlOf(b), "PATCH", "/v1/admin/licenses/globex", { expiresAt: "2020-01-01T00:00:00Z" });
  const renewMs = await within5s(
    async () => (await verifyOn(a, rotated.body.key)).body.code === "EGRESS_ERR_LICENSE_EXPIRED",
    "A to see the new expiry",
  );
  process.stdout.write(
    `# in force on the other replica after: create ${createMs} ms, revoke ${revokeMs} ms, rotate ${rotateMs} ms, renew ${renewMs} ms\n`,
  );
});
