import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Writable } from "node:stream";
import { test } from "node:test";
import pino from "pino";
import { stringify } from "yaml";
import { loadControlPlaneConfig } from "../../src/controlplane/config.ts";
import { probeNamespace } from "../../src/controlplane/isolation.ts";
import { startControlPlane } from "../../src/controlplane/server.ts";
import { ConfigError } from "../../src/errors.ts";
import { tempDir } from "../helpers/processes.ts";

// agentServer.isolation: the control plane starts only with an operating-system boundary around deployed code, or
// with the explicit, loudly logged choice of none.

const KEY = "a-key-of-24-characters!!";
const CLI = new URL("../../src/cli.ts", import.meta.url).pathname;

function configFile(agentServer: Record<string, unknown> = {}) {
  const dir = tempDir("controlplane-isolation-");
  const path = join(dir, "controlplane.yaml");
  writeFileSync(path, stringify({ listen: "127.0.0.1:0", dataDir: join(dir, "data"), apiKeys: [KEY], agentServer }));
  return { path, dataDir: join(dir, "data") };
}

const silent = pino({ level: "silent" });

async function refusal(agentServer: Record<string, unknown>, bwrap: string) {
  const file = configFile(agentServer);
  const err = await startControlPlane(loadControlPlaneConfig(file.path, {}), { logger: silent, bwrap }).then(
    () => assert.fail("the control plane started"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ConfigError, String(err));
  assert.equal(existsSync(file.dataDir), false, "a refused start writes nothing");
  return err.problems.join("\n");
}

test("bubblewrap works here (CI installs it): deployed code runs in namespaces with no capabilities", () => {
  assert.equal(probeNamespace("/usr/bin/bwrap", process.execPath), undefined, "install bubblewrap: apt-get install bubblewrap");
});

test("with no isolation available the control plane refuses to start, naming agentServer.isolation and the fix", async () => {
  const missing = await refusal({}, "/nonexistent/bwrap");
  assert.match(missing, /^agentServer\.isolation: no isolation is available for deployed code \(\/nonexistent\/bwrap failed: .*ENOENT/);
  assert.match(missing, /apt-get install bubblewrap.*agentServer\.runAsUidBase.*only for code you wrote, agentServer\.isolation: none$/);
  // A bwrap that cannot make namespaces here (as when user namespaces are off): the same.
  assert.match(await refusal({}, "/bin/false"), /^agentServer\.isolation: no isolation is available .*\/bin\/false failed/);
  assert.match(await refusal({ isolation: "namespace" }, "/bin/false"), /^agentServer\.isolation: namespace is not available/);

  // The real command, with no bwrap on its PATH: exit 2 and the same words.
  const file = configFile();
  const result = spawnSync(process.execPath, [CLI, "controlplane", "serve", "--config", file.path], {
    env: { PATH: dirname(process.execPath), HOME: dirname(file.path) },
    encoding: "utf8",
    timeout: 30_000,
  });
  assert.equal(result.status, 2, result.stderr);
  assert.match(result.stderr, /agentServer\.isolation: no isolation is available for deployed code \(bwrap is not on PATH\)/);
});

test("isolation user needs runAsUidBase; runAsUidBase with none is refused as a contradiction, with namespace it names the users", async () => {
  assert.match(await refusal({ isolation: "user" }, "/usr/bin/bwrap"), /^agentServer\.isolation: user needs agentServer\.runAsUidBase/);
  assert.throws(() => loadControlPlaneConfig(configFile({ isolation: "none", runAsUidBase: 300000 }).path, {}), {
    name: "ConfigError",
    message: /agentServer\.runAsUidBase: a user per deployment is isolation user, auto or namespace, not none/,
  });
  assert.equal(
    loadControlPlaneConfig(configFile({ isolation: "namespace", runAsUidBase: 300000 }).path, {}).agentServer.runAsUidBase,
    300000,
  );
  const file = configFile({ isolation: "sandboxed" });
  assert.throws(() => loadControlPlaneConfig(file.path, {}), { name: "ConfigError", message: /agentServer\.isolation: / });
});

test("isolation none starts, and says loudly that deployed code is not isolated", async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const file = configFile({ isolation: "none" });
  const controlPlane = await startControlPlane(loadControlPlaneConfig(file.path, {}), {
    logger: pino({ level: "info" }, sink),
    bwrap: "/nonexistent/bwrap",
  });
  try {
    const warning = lines.map((line) => JSON.parse(line)).find((entry) => entry.isolation === "none");
    assert.equal(warning?.level, 40, "a warning");
    assert.match(warning.msg, /^UNISOLATED: .*native code in a graph can read secrets\.key.*Only for code you wrote\./);
    assert.equal((await fetch(`${controlPlane.url}/ok`)).status, 200);
  } finally {
    await controlPlane.close();
  }
});
