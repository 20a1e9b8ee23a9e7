import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import { testLicense } from "../helpers/fixtures.ts";
import { agentConfig, NOWHERE, runCli, startAgentProcess, tempDir } from "../helpers/processes.ts";

/** A loopback port nothing listens on now (the kernel's pick, released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function yamlFile(text: string): string {
  const path = join(tempDir(), "egress.yaml");
  writeFileSync(path, text);
  return path;
}

test("validate lists every mistake at once: a bad beaconUrl does not hide an old instanceVersion or crossed backoffs", async () => {
  const path = yamlFile('beaconUrl: "ftp://beacon"\ninstanceVersion: "0.8.0"\nlicenseKey: k\nretry:\n  minBackoff: 1h\n  maxBackoff: 1m\n');
  const { code, stderr } = await runCli(["validate", "--config", path], { env: { EGRESS_CONFIG: "" } });
  assert.equal(code, 2);
  assert.match(stderr, /beaconUrl: must be an http\(s\) URL/);
  assert.match(stderr, /instanceVersion: 0\.8\.0 is older than 0\.9\.0/);
  assert.match(stderr, /retry\.minBackoff: must not exceed retry\.maxBackoff/);
});

test("a misspelt key gets a 'did you mean', at the top and inside a section", async () => {
  const path = yamlFile('beaconURL: "https://beacon.example"\nlicenseKey: k\nretry:\n  minBackof: 1s\n');
  const { code, stderr } = await runCli(["validate", "--config", path], { env: { EGRESS_CONFIG: "" } });
  assert.equal(code, 2);
  assert.match(stderr, /beaconURL: unknown key; did you mean beaconUrl\?/);
  assert.match(stderr, /retry\.minBackof: unknown key; did you mean minBackoff\?/);
});

test("a version YAML reads as a number says to quote it", async () => {
  const { stderr } = await runCli(["validate", "--config", yamlFile("instanceVersion: 0.10\nlicenseKey: k\n")], {
    env: { EGRESS_CONFIG: "" },
  });
  assert.match(
    stderr,
    /instanceVersion: .*received number \(YAML read it as a number: quote it as written, e\.g\. instanceVersion: "0\.10"\)/,
  );
});

test("a YAML error shows the lines around it, keys and indentation only: a value (here a license key) never", async () => {
  const path = yamlFile("beaconUrl: https://beacon.example\nlicenseKey: 'k-secret-123\nretry:\n  minBackoff: 1s\n");
  const { code, stderr } = await runCli(["validate", "--config", path], { env: { EGRESS_CONFIG: "" } });
  assert.equal(code, 2);
  assert.match(stderr, /not valid YAML: .*\(noticed at line \d+; the mistake may be on the line before or after\)/);
  assert.match(stderr, /\d+ \| licenseKey: …/);
  assert.doesNotMatch(stderr, /k-secret-123|beacon\.example/);

  const indented = yamlFile("licenseKey: k\nretry:\n  minBackoff: 1s\n   maxBackoff: 2s\n");
  const shown = await runCli(["validate", "--config", indented], { env: { EGRESS_CONFIG: "" } });
  assert.match(shown.stderr, / 4 \| {4}maxBackoff: …/, "the wrongly indented line is in the frame, indentation kept");
});

test("preview runs without a license key (it never sends; the key shows redacted anyway)", async () => {
  const { configPath } = agentConfig(NOWHERE);
  const { code, stdout, stderr } = await runCli(["preview", "--config", configPath], {
    env: { PLATFORM_LICENSE_KEY: "", EGRESS_CONFIG: "" },
  });
  assert.equal(code, 0, stderr);
  assert.match(stdout, /# license: POST http:\/\/127\.0\.0\.1:4\/v1\/beacon\/verify/);
  assert.match(stdout, /"license": "\[REDACTED\]"/);
});

test("status and audit find the sidecar from --config or EGRESS_CONFIG, as start does; --url still wins", async () => {
  const port = await freePort();
  const fixture = agentConfig(NOWHERE, { listen: `127.0.0.1:${port}` });
  const agent = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: testLicense().key });
  try {
    const byFlag = await runCli(["status", "--json", "--config", fixture.configPath], { env: { EGRESS_CONFIG: "" } });
    assert.equal(byFlag.code, 0, byFlag.stderr);
    assert.ok(JSON.parse(byFlag.stdout).streams.billing, "the status of the sidecar on the configured port");
    const byEnv = await runCli(["status", "--json"], { env: { EGRESS_CONFIG: fixture.configPath } });
    assert.equal(byEnv.code, 0, byEnv.stderr);
    const audit = await runCli(["audit", "--json", "--config", fixture.configPath], { env: { EGRESS_CONFIG: "" } });
    assert.equal(audit.code, 0, audit.stderr);
    const elsewhere = await runCli(["status", "--url", `http://127.0.0.1:${await freePort()}`], {
      env: { EGRESS_CONFIG: fixture.configPath },
    });
    assert.notEqual(elsewhere.code, 0);
    assert.match(elsewhere.stderr, /cannot reach the sidecar at http:\/\/127\.0\.0\.1:\d+/);
  } finally {
    await agent.stop();
  }
});
