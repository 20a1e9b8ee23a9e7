import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import pino from "pino";
import { loadBeaconConfig } from "../../src/beacon/config.ts";
import { startBeacon } from "../../src/beacon/server.ts";
import { ConfigError } from "../../src/errors.ts";
import { ADMIN_KEY } from "../helpers/beacon-admin.ts";
import { testLicense } from "../helpers/fixtures.ts";
import { connectionsTo, exclusiveLock, lifeAfterFailedStart, srcModule, takenPort } from "../helpers/leaks.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { beaconConfig, tempDir } from "../helpers/processes.ts";

// The admin listener's keys, and its start through the beacon's closer stack.

const file = (yaml: string) => {
  const path = join(tempDir("beacon-config-"), "beacon.yaml");
  writeFileSync(path, yaml);
  return path;
};
const problems = (run: () => unknown): string[] => {
  try {
    run();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  assert.fail("no ConfigError");
};

test("admin: 127.0.0.1:8081 and 26h by default, '' turns the listener off, keys checked as the control plane's, env adds one", () => {
  const defaults = loadBeaconConfig(undefined, {}, {}).admin;
  assert.deepEqual(defaults, { listen: { host: "127.0.0.1", port: 8081 }, apiKeys: [], silentAfter: 26 * 3600 * 1000 });
  assert.equal(loadBeaconConfig(file("admin: {listen: ''}\n"), {}, {}).admin.listen, "");
  const hashed = `sha256:${"ab".repeat(32)}`;
  const withKeys = loadBeaconConfig(file(`admin: {apiKeys: ['${hashed}'], silentAfter: 2d}\n`), {}, { BEACON_ADMIN_API_KEY: ADMIN_KEY });
  assert.deepEqual([withKeys.admin.apiKeys, withKeys.admin.silentAfter], [[hashed, ADMIN_KEY], 2 * 24 * 3600 * 1000]);
  assert.match(
    problems(() => loadBeaconConfig(file("admin: {apiKeys: [short], listen: nowhere}\n"), {}, {})).join("\n"),
    /admin\.apiKeys\[0\]: must be a key of at least 16/,
  );
  assert.match(problems(() => loadBeaconConfig(file("admin: {listen: nowhere}\n"), {}, {})).join("\n"), /admin\.listen/);
  assert.match(problems(() => loadBeaconConfig(file("admin: {apiKeys: ['sha256:ABC']}\n"), {}, {}))[0]!, /admin\.apiKeys\[0\]/);
});

test("an admin listener whose port is taken fails the start, and closes everything the start had opened", async (t) => {
  const database = await freshDatabase("egress_admin_start");
  t.after(database.drop);
  const port = await takenPort(t);
  const sqlite = beaconConfig([testLicense()], { admin: { listen: `127.0.0.1:${port}`, apiKeys: [ADMIN_KEY] } });
  await assert.rejects(startBeacon(loadBeaconConfig(sqlite.configPath, {}, {}), { logger: pino({ level: "silent" }) }), /EADDRINUSE/);
  assert.equal(exclusiveLock(join(sqlite.dataDir, "beacon.db")), "ok", "beacon.db closed");

  const postgres = beaconConfig([testLicense()], {
    admin: { listen: `127.0.0.1:${port}`, apiKeys: [ADMIN_KEY] },
    database: { url: database.url },
  });
  const { lingeredMs, output } = await lifeAfterFailedStart(`
    import { createLogger } from ${JSON.stringify(srcModule("log.ts"))};
    import { loadBeaconConfig } from ${JSON.stringify(srcModule("beacon/config.ts"))};
    import { startBeacon } from ${JSON.stringify(srcModule("beacon/server.ts"))};
    const config = loadBeaconConfig(${JSON.stringify(postgres.configPath)}, {}, {});
    await startBeacon(config, { logger: createLogger("silent") }).catch((err) => console.log("start failed:", err.code));
  `);
  assert.match(output, /start failed: EADDRINUSE/);
  assert.ok(
    lingeredMs !== undefined && lingeredMs < 3_000,
    `the process lived on after its failed start (the license poll?): ${lingeredMs} ms`,
  );
  assert.equal(await connectionsTo(database.name), 0);
});
