import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { loadBeaconConfig } from "../../src/beacon/config.ts";
import { ConfigError } from "../../src/errors.ts";
import { tempDir } from "../helpers/processes.ts";

const file = (yaml: string) => {
  const path = join(tempDir("beacon-config-"), "beacon.yaml");
  writeFileSync(path, yaml);
  return path;
};

test("database.url: empty keeps SQLite; BEACON_DATABASE_URL and BEACON_SIGNING_KEY_FILE beat the file", () => {
  assert.deepEqual(loadBeaconConfig(undefined, {}, {}).database, { url: "", poolSize: 10 });
  const path = file("database: {url: postgres://a@db/beacon, poolSize: 4}\nsigningKeyFile: /etc/key.pem\n");
  const fromFile = loadBeaconConfig(path, {}, {});
  assert.deepEqual([fromFile.database, fromFile.signingKeyFile], [{ url: "postgres://a@db/beacon", poolSize: 4 }, "/etc/key.pem"]);
  const fromEnv = loadBeaconConfig(
    path,
    {},
    { BEACON_DATABASE_URL: "postgresql://b@other/beacon", BEACON_SIGNING_KEY_FILE: "/run/secrets/key" },
  );
  assert.deepEqual([fromEnv.database, fromEnv.signingKeyFile], [{ url: "postgresql://b@other/beacon", poolSize: 4 }, "/run/secrets/key"]);
});

test("a database.url that is not postgres:// is refused naming the key, without echoing the URL", () => {
  for (const env of [{}, { BEACON_DATABASE_URL: "mysql://root:hunter2-pw@db/beacon" }]) {
    const path = file(env.BEACON_DATABASE_URL ? "{}\n" : "database: {url: 'mysql://root:hunter2-pw@db/beacon'}\n");
    assert.throws(
      () => loadBeaconConfig(path, {}, env),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, /database\.url: must be a postgres:\/\/ URL/);
        assert.doesNotMatch(err.message, /hunter2-pw/);
        return true;
      },
    );
  }
  assert.throws(() => loadBeaconConfig(file("database: {poolSize: 0}\n"), {}, {}), /database\.poolSize/);
});

test("a license's expiresAt takes any offset, as every timestamp does, and refuses a time without one naming the key", () => {
  const license = (expiresAt: string) =>
    file(
      `licenses: [{id: acme, key: lic-0123456789abcdef, organizationId: 6f1c8a52-3b7e-4c55-9a51-0d2f4e6b7a10, seats: 5, expiresAt: '${expiresAt}'}]\n`,
    );
  assert.equal(loadBeaconConfig(license("2027-12-31T01:00:00+01:00"), {}, {}).licenses[0]!.expiresAt, "2027-12-31T00:00:00.000Z");
  for (const [expiresAt, problem] of [
    ["2027-12-31T00:00:00", /licenses\[0\]\.expiresAt: has no UTC offset/],
    ["2027-02-30T00:00:00Z", /licenses\[0\]\.expiresAt: is not a date/],
  ] as const) {
    assert.throws(
      () => loadBeaconConfig(license(expiresAt), {}, {}),
      (err: unknown) => err instanceof ConfigError && problem.test(err.message),
      expiresAt,
    );
  }
});
