import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import pino from "pino";
import { stringify } from "yaml";
import { loadControlPlaneConfig } from "../../src/controlplane/config.ts";
import { startControlPlane } from "../../src/controlplane/server.ts";
import { HttpServer } from "../../src/http/server.ts";
import { exclusiveLock, lifeAfterFailedStart, srcModule, takenPort } from "../helpers/leaks.ts";
import { runCli, tempDir } from "../helpers/processes.ts";

// A control plane that cannot start (its port taken) leaves controlplane.db closed and its process free to exit;
// a close whose first step throws still closes the database.

const silent = pino({ level: "silent" });

function configFile(listen: string) {
  const dir = tempDir("controlplane-start-");
  const path = join(dir, "controlplane.yaml");
  const dataDir = join(dir, "data");
  writeFileSync(path, stringify({ listen, dataDir, apiKeys: ["a-key-of-24-characters!!"], agentServer: { isolation: "none" } }));
  return { path, dataDir };
}

test("a control plane whose port is taken fails to start, leaves controlplane.db closed, and its process exits by itself", async (t) => {
  const port = await takenPort(t);
  const file = configFile(`127.0.0.1:${port}`);
  await assert.rejects(startControlPlane(loadControlPlaneConfig(file.path, {}), { logger: silent }), /EADDRINUSE/);
  assert.equal(exclusiveLock(join(file.dataDir, "controlplane.db")), "ok");

  const { lingeredMs, output } = await lifeAfterFailedStart(`
    import { createLogger } from ${JSON.stringify(srcModule("log.ts"))};
    import { loadControlPlaneConfig } from ${JSON.stringify(srcModule("controlplane/config.ts"))};
    import { startControlPlane } from ${JSON.stringify(srcModule("controlplane/server.ts"))};
    const config = loadControlPlaneConfig(${JSON.stringify(file.path)}, {});
    await startControlPlane(config, { logger: createLogger("silent") }).catch((err) => console.log("start failed:", err.code));
  `);
  assert.match(output, /start failed: EADDRINUSE/);
  assert.ok(lingeredMs !== undefined && lingeredMs < 3_000, `the process lived on after its failed start: ${lingeredMs} ms; ${output}`);
});

test("a close whose HTTP server throws still closes controlplane.db, and reports the server's error", async (t) => {
  const file = configFile("127.0.0.1:0");
  const controlPlane = await startControlPlane(loadControlPlaneConfig(file.path, {}), { logger: silent });
  const close = HttpServer.prototype.close;
  t.mock.method(HttpServer.prototype, "close", async function (this: HttpServer) {
    await close.call(this);
    throw new Error("the server would not close");
  });
  await assert.rejects(controlPlane.close(), /the server would not close/);
  assert.equal(exclusiveLock(join(file.dataDir, "controlplane.db")), "ok", "controlplane.db was closed all the same");
});

test("a secrets.key that is not a key: `controlplane serve` exits 1 naming EGRESS_ERR_SECRET_KEY, with controlplane.db closed", async () => {
  const file = configFile("127.0.0.1:0");
  mkdirSync(file.dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(join(file.dataDir, "secrets.key"), "not-a-key\n", { mode: 0o600 });
  await assert.rejects(startControlPlane(loadControlPlaneConfig(file.path, {}), { logger: silent }), {
    code: "EGRESS_ERR_SECRET_KEY",
    message: /secrets\.key is not a 32-byte base64 key: restore it from the backup of controlplane\.db/,
  });
  assert.equal(exclusiveLock(join(file.dataDir, "controlplane.db")), "ok");
  const result = await runCli(["controlplane", "serve", "--config", file.path]);
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, /EGRESS_ERR_SECRET_KEY: .*secrets\.key is not a 32-byte base64 key/);
});
