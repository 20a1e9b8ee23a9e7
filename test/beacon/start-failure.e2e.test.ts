import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import pino from "pino";
import { loadBeaconConfig } from "../../src/beacon/config.ts";
import { startBeacon } from "../../src/beacon/server.ts";
import { HttpServer } from "../../src/http/server.ts";
import { testLicense } from "../helpers/fixtures.ts";
import { connectionsTo, exclusiveLock, lifeAfterFailedStart, srcModule, takenPort } from "../helpers/leaks.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { beaconConfig, runCli } from "../helpers/processes.ts";

// A beacon that cannot start (its port taken) leaves nothing open: not beacon.db, not a PostgreSQL connection, not
// a timer that keeps its process alive. And a close whose first step throws still closes the rest.

const silent = pino({ level: "silent" });

function config(listen: string, extra: Record<string, unknown> = {}) {
  const fixture = beaconConfig([testLicense()], extra);
  return { config: loadBeaconConfig(fixture.configPath, { listen }, {}), fixture };
}

test("a beacon whose port is taken fails to start and leaves beacon.db closed (it can be locked exclusively)", async (t) => {
  const port = await takenPort(t);
  const { config: taken, fixture } = config(`127.0.0.1:${port}`);
  await assert.rejects(startBeacon(taken, { logger: silent }), /EADDRINUSE/);
  assert.equal(exclusiveLock(join(fixture.dataDir, "beacon.db")), "ok");
});

test("on PostgreSQL, a failed start leaves no connection to the database, and the process exits by itself", async (t) => {
  const database = await freshDatabase("egress_beacon_start");
  t.after(database.drop);
  const port = await takenPort(t);
  const { config: taken, fixture } = config(`127.0.0.1:${port}`, { database: { url: database.url } });
  await assert.rejects(startBeacon(taken, { logger: silent }), /EADDRINUSE/);
  assert.equal(await connectionsTo(database.name), 0);

  const { lingeredMs, output } = await lifeAfterFailedStart(`
    import { createLogger } from ${JSON.stringify(srcModule("log.ts"))};
    import { loadBeaconConfig } from ${JSON.stringify(srcModule("beacon/config.ts"))};
    import { startBeacon } from ${JSON.stringify(srcModule("beacon/server.ts"))};
    const config = loadBeaconConfig(${JSON.stringify(fixture.configPath)}, { listen: "127.0.0.1:${port}" }, {});
    await startBeacon(config, { logger: createLogger("silent") }).catch((err) => console.log("start failed:", err.code));
  `);
  assert.match(output, /start failed: EADDRINUSE/);
  assert.ok(lingeredMs !== undefined && lingeredMs < 3_000, `the process lived on after its failed start: ${lingeredMs} ms; ${output}`);
});

test("a start that fails after the store opened (a TLS file that cannot be read) closes the store's connections", async (t) => {
  const database = await freshDatabase("egress_beacon_tls");
  t.after(database.drop);
  const tls = { certFile: "/nonexistent/beacon.crt", keyFile: "/nonexistent/beacon.key" };
  const { config: unreadable } = config("127.0.0.1:0", { database: { url: database.url }, tls });
  await assert.rejects(startBeacon(unreadable, { logger: silent }), /tls\.certFile: cannot read \/nonexistent\/beacon\.crt \(ENOENT\)/);
  assert.equal(await connectionsTo(database.name), 0);
});

test("a close whose HTTP server throws still closes the store, and reports the server's error", async (t) => {
  const { config: free, fixture } = config("127.0.0.1:0");
  const beacon = await startBeacon(free, { logger: silent });
  const close = HttpServer.prototype.close;
  t.mock.method(HttpServer.prototype, "close", async function (this: HttpServer) {
    await close.call(this);
    throw new Error("the server would not close");
  });
  await assert.rejects(beacon.close(), /the server would not close/);
  assert.equal(exclusiveLock(join(fixture.dataDir, "beacon.db")), "ok", "beacon.db was closed all the same");
});

test("a beacon.db of a newer beacon: `beacon` exits 1 naming EGRESS_ERR_BEACON_SCHEMA, and the file is left as it was, closed", async () => {
  const { fixture } = config("127.0.0.1:0");
  mkdirSync(fixture.dataDir, { recursive: true });
  const newer = new Database(join(fixture.dataDir, "beacon.db"));
  newer.pragma("user_version = 99");
  newer.close();
  const result = await runCli(["beacon", "--config", fixture.configPath]);
  assert.equal(result.code, 1, result.stderr);
  assert.match(
    result.stderr,
    /EGRESS_ERR_BEACON_SCHEMA: beacon\.db has schema version 99, newer than this beacon \(\d+\); upgrade the beacon/,
  );
  await assert.rejects(startBeacon(loadBeaconConfig(fixture.configPath, {}, {}), { logger: silent }), { code: "EGRESS_ERR_BEACON_SCHEMA" });
  assert.equal(exclusiveLock(join(fixture.dataDir, "beacon.db")), "ok", "the refused file is not left open");
  const after = new Database(join(fixture.dataDir, "beacon.db"), { readonly: true });
  assert.equal(after.pragma("user_version", { simple: true }), 99);
  after.close();
});
