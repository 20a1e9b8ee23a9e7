import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { agentConfig, NOWHERE, postJson, runCli, startService, tempDir, useCli, type AgentFixture } from "../helpers/processes.ts";

// The chart and `docker run --read-only` give the sidecar a read-only root filesystem and, now, no /tmp of its own:
// only the data dir's volume is writable. Here a user and mount namespace of its own (no privilege needed) makes it
// so for a real sidecar, started as the image starts it (bin/egress-agent.js: V8's compile cache wants the temp dir).
useCli(new URL("../../bin/egress-agent.js", import.meta.url).pathname);

/** Binds the data dir (writable), then makes / and the temp dir read-only, then execs the CLI. */
const READ_ONLY_AND_EXEC =
  'mount --bind "$1" "$1" && mount -o remount,bind,ro / && mount --bind "$2" "$2" && mount -o remount,bind,ro "$2" && shift 2 && exec "$@"';
const launcher = (dataDir: string, tmp: string) => [
  "unshare",
  "--user",
  "--map-root-user",
  "--mount",
  "sh",
  "-c",
  READ_ONLY_AND_EXEC,
  "sh",
  dataDir,
  tmp,
];

function unavailable(): string | false {
  const dir = tempDir("egress-ro-probe-");
  const [data, tmp] = [join(dir, "data"), join(dir, "tmp")];
  mkdirSync(data);
  mkdirSync(tmp);
  const [command, ...args] = [...launcher(data, tmp), "sh", "-c", `! touch /probe-$$ ${tmp}/probe 2>/dev/null && touch ${data}/probe`];
  const probe = spawnSync(command!, args, { encoding: "utf8" });
  if (probe.error) return `unshare cannot run: ${probe.error.message}`;
  if (probe.status !== 0) return `no read-only root filesystem in a private mount namespace (exit ${probe.status}): ${probe.stderr.trim()}`;
  return false;
}

const skip = unavailable();
const license = testLicense();

/** The sidecar with nothing writable but its data dir; HOME and TMPDIR point at a read-only directory, as in the image. */
async function startReadOnly(fixture: AgentFixture, healthFile: string) {
  const tmp = join(fixture.dir, "tmp");
  mkdirSync(tmp);
  mkdirSync(fixture.dataDir);
  const env = { PLATFORM_LICENSE_KEY: license.key, HOME: tmp, TMPDIR: tmp, EGRESS_HEALTH_FILE: healthFile };
  const agent = await startService(["start", "--config", fixture.configPath], "sidecar listening", env, launcher(fixture.dataDir, tmp));
  return { agent, tmp, env };
}

test("read-only root filesystem, no writable temp dir: the sidecar serves, takes a batch and passes the image's healthcheck with its health file in the data dir", {
  skip,
}, async () => {
  const fixture = agentConfig(NOWHERE, { usageReporting: false, selfTelemetry: { enabled: false } });
  const healthFile = join(fixture.dataDir, "egress-agent.health");
  const { agent, tmp, env } = await startReadOnly(fixture, healthFile);
  try {
    assert.equal((await fetch(`${agent.url}/healthz`)).status, 200);
    // The largest batch a request may carry, in one SQLite transaction: nothing spills to a temp file.
    const batch = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(10_000) });
    assert.equal(batch.status, 202, JSON.stringify(batch.body));
    assert.equal(batch.body.accepted, 10_000);
    assert.deepEqual(readdirSync(tmp), [], "nothing written to the temp dir (V8's compile cache is off)");
    // (The check runs outside the namespace, where the temp dir is writable.)
    const check = await runCli(["healthcheck"], { env });
    assert.equal(check.code, 0, check.stderr);
    assert.equal(readFileSync(healthFile, "utf8"), `${agent.url}/healthz\n`);
    assert.equal(agent.child.exitCode, null, "still running");
    assert.doesNotMatch(agent.output(), /EROFS|EACCES|read-only file system|EGRESS_HEALTH_FILE/, "nothing it wanted to write was refused");
  } finally {
    assert.equal(await agent.stop(), 0);
  }
});

test("a health file it cannot write (the old image's /tmp, now read-only) is a warning naming it: the sidecar keeps serving", {
  skip,
}, async () => {
  const fixture = agentConfig(NOWHERE, { usageReporting: false, selfTelemetry: { enabled: false } });
  const healthFile = join(fixture.dir, "tmp", "egress-agent.health");
  const { agent, env } = await startReadOnly(fixture, healthFile);
  try {
    // Before, the failed write ended the process right after it logged "sidecar listening".
    assert.equal((await fetch(`${agent.url}/healthz`)).status, 200);
    assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(2) })).status, 202);
    const warning = agent
      .output()
      .split("\n")
      .find((line) => line.includes("EGRESS_HEALTH_FILE cannot be written"));
    assert.ok(warning, agent.output());
    assert.equal(JSON.parse(warning).healthFile, healthFile);
    assert.equal(JSON.parse(warning).code, "EROFS");
    assert.equal(existsSync(healthFile), false);
    const check = await runCli(["healthcheck"], { env });
    assert.equal(check.code, 1);
    assert.match(check.stderr, /nothing listens yet .* a service that could not write it says so in its log/);
    assert.equal(agent.child.exitCode, null, "still running");
  } finally {
    assert.equal(await agent.stop(), 0);
  }
});
