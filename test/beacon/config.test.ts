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
