import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ADMIN_KEY, adminUrlOf } from "../helpers/beacon-admin.ts";
import { ORG_ID, testLicense } from "../helpers/fixtures.ts";
import { beaconConfig, NOWHERE, runCli, startBeacon, tempDir, type ServiceProcess } from "../helpers/processes.ts";

// `egress-agent beacon licenses ...` against a real beacon's admin listener; and how the listener is configured.

describe("egress-agent beacon licenses", () => {
  let beacon: ServiceProcess;
  let adminUrl: string;
  const printed: string[] = [];
  const cli = (args: string[], env: NodeJS.ProcessEnv = { BEACON_ADMIN_API_KEY: ADMIN_KEY }) =>
    runCli(["beacon", "licenses", ...args, "--url", adminUrl], { env });

  before(async () => {
    beacon = await startBeacon(beaconConfig([], { admin: { listen: "127.0.0.1:0" } }), { BEACON_ADMIN_API_KEY: ADMIN_KEY });
    adminUrl = adminUrlOf(beacon);
  });
  after(async () => {
    assert.equal(await beacon.stop(), 0);
    for (const key of [ADMIN_KEY, ...printed]) assert.ok(!beacon.output().includes(key));
  });

  test("create, list, show, update, revoke and rotate-key: JSON for scripts, tables for people", async () => {
    const created = await cli([
      "create",
      "--id",
      "acme",
      "--org",
      ORG_ID,
      "--expires-at",
      "2099-01-01T00:00:00Z",
      "--seats",
      "12",
      "--json",
    ]);
    assert.equal(created.code, 0, created.stderr);
    const license = JSON.parse(created.stdout);
    printed.push(license.key);
    assert.deepEqual([license.id, license.seats, license.state], ["acme", 12, "active"]);

    const human = await cli(["create", "--id", "globex", "--org", ORG_ID, "--expires-at", "2099-01-01T00:00:00Z", "--seats", "3"]);
    assert.equal(human.code, 0, human.stderr);
    const key = /^key: (lic-\S+)$/m.exec(human.stdout)?.[1];
    assert.ok(key, human.stdout);
    printed.push(key);
    assert.match(human.stderr, /shown this once/);

    const list = await cli(["list"]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^ID\s+ORGANIZATION\s+EXPIRES\s+SEATS\s+STATE\s+LAST VERIFIED\s+INSTANCES$/m);
    assert.match(list.stdout, /^acme\s+\S+\s+2099-01-01T00:00:00.000Z\s+12\s+active\s+-\s+0$/m);
    assert.deepEqual(
      JSON.parse((await cli(["list", "--json"])).stdout).licenses.map((l: { id: string }) => l.id),
      ["acme", "globex"],
    );

    const updated = await cli(["update", "acme", "--seats", "20", "--json"]);
    assert.equal(JSON.parse(updated.stdout).seats, 20);
    const shown = await cli(["show", "acme"]);
    assert.match(shown.stdout, /^acme\s+.*\s20\s+active/m);
    assert.match(shown.stdout, /no usage reported/);

    const rotated = await cli(["rotate-key", "acme", "--json"]);
    const newKey = JSON.parse(rotated.stdout).key;
    printed.push(newKey);
    assert.notEqual(newKey, license.key);
    const revoked = await cli(["revoke", "globex"]);
    assert.match(revoked.stdout, /^license globex: revoked/m);
  });

  test("errors say what went wrong: unreachable, a refused key, an unknown id, a taken id, the field at fault", async () => {
    const keyFile = join(tempDir(), "admin.key");
    writeFileSync(keyFile, `${ADMIN_KEY}\n`);
    const viaFile = await runCli(["beacon", "licenses", "list", "--url", adminUrl, "--api-key-file", keyFile], {
      env: { BEACON_ADMIN_API_KEY: "" },
    });
    assert.equal(viaFile.code, 0, viaFile.stderr);

    const unreachable = await runCli(["beacon", "licenses", "list", "--url", NOWHERE], { env: { BEACON_ADMIN_API_KEY: ADMIN_KEY } });
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.stderr, /EGRESS_ERR_BEACON_ADMIN: cannot reach the beacon's admin listener at http:\/\/127\.0\.0\.1:4/);
    const noKey = await cli(["list"], { BEACON_ADMIN_API_KEY: "" });
    assert.equal(noKey.code, 2);
    assert.match(noKey.stderr, /--api-key-file: give the admin key in a file, or set env BEACON_ADMIN_API_KEY/);
    const badKey = await cli(["list"], { BEACON_ADMIN_API_KEY: "wrong-admin-key-0000000" });
    assert.equal(badKey.code, 1);
    assert.match(badKey.stderr, /401 EGRESS_ERR_API_KEY_INVALID: the admin key is missing or not accepted/);
    assert.ok(!badKey.stderr.includes("wrong-admin-key"), "the key is not echoed");
    const unknown = await cli(["show", "nope"]);
    assert.match(unknown.stderr, /404 EGRESS_ERR_LICENSE_NOT_FOUND/);
    const taken = await cli(["create", "--id", "acme", "--org", ORG_ID, "--expires-at", "2099-01-01T00:00:00Z", "--seats", "1"]);
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /409 EGRESS_ERR_LICENSE_EXISTS: a license with this id exists already/);
    const badField = await cli(["update", "acme", "--expires-at", "next week"]);
    assert.equal(badField.code, 1);
    assert.match(badField.stderr, /answered 422: body\.expiresAt invalid_format: fix the fields named/);
    const badSeats = await cli(["update", "acme", "--seats", "lots"]);
    assert.deepEqual([badSeats.code, /--seats: must be a whole number/.test(badSeats.stderr)], [2, true]);
  });
});

describe("the admin listener's configuration", () => {
  test("admin.listen set without an admin key: exit 2 naming admin.apiKeys; a malformed BEACON_ADMIN_API_KEY is refused too", async () => {
    const fixture = beaconConfig([testLicense()], { admin: { listen: "127.0.0.1:0" } });
    const noKey = await runCli(["beacon", "--config", fixture.configPath], { env: { BEACON_ADMIN_API_KEY: "" } });
    assert.equal(noKey.code, 2);
    assert.match(noKey.stderr, /admin\.apiKeys: admin\.listen is set but no admin key is/);
    const short = await runCli(["beacon", "--config", fixture.configPath], { env: { BEACON_ADMIN_API_KEY: "short" } });
    assert.equal(short.code, 2);
    assert.match(short.stderr, /env BEACON_ADMIN_API_KEY: must be a key of at least 16 characters/);
    assert.ok(!short.stderr.includes("short\n"));
  });

  test("no admin key and admin.listen left at its default: the beacon serves its sidecars, the admin listener stays closed", async () => {
    const beacon = await startBeacon(beaconConfig([testLicense()]), { BEACON_ADMIN_API_KEY: "" });
    try {
      assert.match(beacon.output(), /admin listener closed: no admin key/);
      assert.throws(() => adminUrlOf(beacon));
    } finally {
      assert.equal(await beacon.stop(), 0);
    }
  });
});
