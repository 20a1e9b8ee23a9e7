import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { testLicense } from "../helpers/fixtures.ts";
import { agentConfig, beaconConfig, getJson, runCli, startAgentProcess, startBeacon, tempDir, waitFor } from "../helpers/processes.ts";

test("start refuses a config without a license, naming the key and where to set it (exit 2)", async () => {
  const fixture = agentConfig("http://127.0.0.1:9");
  const { code, stderr } = await runCli(["start", "--config", fixture.configPath], { env: { PLATFORM_LICENSE_KEY: "" } });
  assert.equal(code, 2);
  assert.match(stderr, /licenseKey: required unless offline\.enabled \(set licenseKey, licenseKeyFile or PLATFORM_LICENSE_KEY\)/);
});

test("every bad key and env value is reported at once, each on its own line", async () => {
  const dir = tempDir();
  const path = join(dir, "egress.yaml");
  writeFileSync(
    path,
    "beaconUrl: ftp://beacon\ninstanceVersion: 0.8.2\nlimits:\n  batchTransactions: 0\nintervals:\n  flush: often\ntypo: 1\n",
  );
  const { code, stderr } = await runCli(["start", "--config", path], {
    env: { PLATFORM_LICENSE_KEY: "k", PHONE_HOME_USAGE_REPORTING_ENABLED: "maybe", EGRESS_CONFIG: "" },
  });
  assert.equal(code, 2);
  for (const line of [
    /PHONE_HOME_USAGE_REPORTING_ENABLED: must be true or false/,
    /beaconUrl: must be an http\(s\) URL/,
    /limits\.batchTransactions: /,
    /intervals\.flush: must be a positive duration/,
    /typo: unknown key/,
  ]) {
    assert.match(stderr, line);
  }
  writeFileSync(join(dir, "old.yaml"), "instanceVersion: 0.8.2\n");
  const tooOld = await runCli(["start", "--config", join(dir, "old.yaml")], { env: { PLATFORM_LICENSE_KEY: "k" } });
  assert.equal(tooOld.code, 2);
  assert.match(tooOld.stderr, /instanceVersion: 0\.8\.2 is older than 0\.9\.0/);
});

test("the license key may come from licenseKeyFile (a mounted Secret), and EGRESS_CONFIG names the config", async () => {
  const license = testLicense();
  const beacon = await startBeacon(beaconConfig([license]));
  const fixture = agentConfig(beacon.url);
  const keyFile = join(fixture.dir, "license-key");
  writeFileSync(keyFile, `${license.key}\n`);
  const { readFileSync } = await import("node:fs");
  writeFileSync(fixture.configPath, `${readFileSync(fixture.configPath, "utf8")}licenseKeyFile: ${keyFile}\n`);
  const { startService } = await import("../helpers/processes.ts");
  const agent = await startService(["start"], "sidecar listening", { EGRESS_CONFIG: fixture.configPath, PLATFORM_LICENSE_KEY: "" });
  try {
    await waitFor(async () => (await getJson(`${agent.url}/v1/status`)).license.state === "valid", 10_000, "license valid");
  } finally {
    await agent.stop();
    await beacon.stop();
  }
  assert.ok(!agent.output().includes(license.key));
});

test("allowInsecureBeaconUrl: a plain-http beacon that is not loopback is used, with a warning at start", async () => {
  const license = testLicense();
  const beacon = await startBeacon(beaconConfig([license]));
  // The v4-mapped address is not one the check counts as loopback, yet reaches the beacon on this machine.
  const url = beacon.url.replace("127.0.0.1", "[::ffff:127.0.0.1]");
  const refused = await runCli(["start", "--config", agentConfig(url).configPath], { env: { PLATFORM_LICENSE_KEY: license.key } });
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /beaconUrl: http:\/\/ to \[::ffff:7f00:1\]:\d+ would send the license key in clear/);
  const agent = await startAgentProcess(agentConfig(url), { PLATFORM_LICENSE_KEY: license.key, EGRESS_ALLOW_INSECURE_BEACON_URL: "true" });
  try {
    await waitFor(async () => (await getJson(`${agent.url}/v1/status`)).license.state === "valid", 10_000, "license valid");
    const warning = agent
      .output()
      .split("\n")
      .find((line) => line.includes("the license key crosses the network in clear"));
    assert.ok(warning, agent.output());
    assert.equal(JSON.parse(warning).level, 40, "a warning");
  } finally {
    await agent.stop();
    await beacon.stop();
  }
});

test("a restart with the beacon gone keeps the cached token: the license stays valid without a round trip", async () => {
  const license = testLicense();
  const beacon = await startBeacon(beaconConfig([license]));
  const fixture = agentConfig(beacon.url);
  let agent = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: license.key });
  const verified = await waitFor(async () => {
    const s = await getJson(`${agent.url}/v1/status`);
    return s.license.state === "valid" ? s.license : undefined;
  });
  await agent.stop();
  await beacon.stop();

  agent = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: license.key });
  try {
    const status = (await getJson(`${agent.url}/v1/status`)).license;
    assert.equal(status.state, "valid");
    assert.equal(status.verifiedAt, verified.verifiedAt);
    assert.equal(status.expiresAt, verified.expiresAt);
  } finally {
    await agent.stop();
  }
  // Another key must not reuse the cached token.
  const other = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: "lic-some-other-key-0000" });
  try {
    assert.equal((await getJson(`${other.url}/v1/status`)).license.state, "unverified");
  } finally {
    await other.stop();
  }
});
