import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { loadAgentConfig } from "../../src/sidecar/config.ts";
import { startAgent } from "../../src/sidecar/daemon.ts";
import { createLogger } from "../../src/log.ts";
import { testLicense } from "../helpers/fixtures.ts";
import { agentConfig } from "../helpers/processes.ts";

test("a start that fails (its port is taken) leaves the data dir unlocked: the next start on it works", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "egress-daemon-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  t.after(() => taken.close());
  const port = (taken.address() as { port: number }).port;
  const license = testLicense();
  const logger = createLogger("silent");
  // The beacon is never reached in this test: a closed loopback port.
  const load = (listen: string) => {
    const fixture = agentConfig("http://127.0.0.1:9", { listen, selfTelemetry: { enabled: false } }, dir);
    return loadAgentConfig({ file: fixture.configPath, env: { PLATFORM_LICENSE_KEY: license.key } });
  };

  await assert.rejects(startAgent(load(`127.0.0.1:${port}`), { logger }), /EADDRINUSE/);
  const agent = await startAgent(load("127.0.0.1:0"), { logger });
  t.after(() => agent.close());
  const health = await fetch(`${agent.url}/healthz`);
  assert.equal(health.status, 200);
});
