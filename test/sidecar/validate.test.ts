import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { runCli, tempDir } from "../helpers/processes.ts";

/** `validate` prints `key  value  source` rows: the row of one key as [value, source]. */
function row(stdout: string, key: string): [string, string] | undefined {
  const line = stdout.split("\n").find((text) => text.startsWith(`${key} `));
  if (!line) return undefined;
  const [, value, source] = /^\S+\s+(.*?)\s{2,}(\S.*)$/.exec(line) ?? /^\S+\s+()(\S.*)$/.exec(line)!;
  return [value!, source!];
}

test("validate lists every key with its value and where it came from: file, env, default, version default", async () => {
  const dir = tempDir();
  const path = join(dir, "egress.yaml");
  const dbPassword = "db-pw-in-query";
  const urlToken = "beacon-url-token";
  writeFileSync(
    path,
    "instanceVersion: 0.10.2\nintervals:\n  flush: 2s\nconfig:\n  telemetry:\n    logs: true\n" +
      `usage:\n  postgres:\n    url: postgres://app@db.internal:5432/platform?sslmode=require&password=${dbPassword}\n` +
      `beaconUrl: https://beacon.vendor.test/?access_token=${urlToken}\n`,
  );
  const secret = "lic-validate-secret-0001";
  const proxyPassword = "proxy-pw-secret";
  const { code, stdout, stderr } = await runCli(["validate", "--config", path], {
    env: {
      PLATFORM_LICENSE_KEY: secret,
      BEACON_METRICS_ENABLED: "false",
      HTTPS_PROXY: `http://ops:${proxyPassword}@127.0.0.1:3128`,
      EGRESS_CONFIG: "",
    },
  });
  assert.equal(code, 0, stderr);
  assert.deepEqual(row(stdout, "intervals.flush"), ["2s", "file"]);
  assert.deepEqual(row(stdout, "intervals.licenseVerify"), ["1h", "default"]);
  assert.deepEqual(row(stdout, "config.telemetry.logs"), ["true", "file"]);
  assert.deepEqual(row(stdout, "config.telemetry.metrics"), ["false", "env BEACON_METRICS_ENABLED"]);
  // Unset below 0.11.0: off by the version default.
  assert.deepEqual(row(stdout, "config.telemetry.traces"), ["false", "default for instanceVersion 0.10.2"]);
  assert.deepEqual(row(stdout, "licenseKey"), ["(set; hidden)", "env PLATFORM_LICENSE_KEY"]);
  assert.equal(row(stdout, "proxy.https")?.[1], "env HTTPS_PROXY");
  // A password given as a query parameter is hidden like one in the user info; the harmless parameters stay.
  assert.deepEqual(row(stdout, "usage.postgres.url"), [
    "postgres://REDACTED@db.internal:5432/platform?sslmode=require&password=REDACTED",
    "file",
  ]);
  assert.deepEqual(row(stdout, "beaconUrl"), ["https://beacon.vendor.test/?access_token=REDACTED", "file"]);
  for (const hidden of [secret, proxyPassword, dbPassword, urlToken])
    assert.ok(!stdout.includes(hidden), `${hidden} is not in the listing`);
});

test("validate shows what offline mode turns off, and --json gives the same rows", async () => {
  const dir = tempDir();
  const path = join(dir, "egress.yaml");
  writeFileSync(
    path,
    `offline:\n  enabled: true\n  licenseFile: ${join(dir, "l.jwt")}\n  publicKeyFile: ${join(dir, "k.pem")}\nusageReporting: true\n`,
  );
  const { code, stdout, stderr } = await runCli(["validate", "--config", path, "--json"]);
  assert.equal(code, 0, stderr);
  const values = (JSON.parse(stdout) as { values: { key: string; value: string; source: string }[] }).values;
  const byKey = new Map(values.map((entry) => [entry.key, entry]));
  assert.deepEqual(byKey.get("usageReporting"), { key: "usageReporting", value: "false", source: "offline mode" });
  assert.deepEqual(byKey.get("config.telemetry.traces"), { key: "config.telemetry.traces", value: "false", source: "offline mode" });
});

test("validate exits 2 with one line per problem, unknown keys included, and prints no values", async () => {
  const dir = tempDir();
  const path = join(dir, "egress.yaml");
  writeFileSync(
    path,
    "limits:\n  batchTransactions: 0\n  batchBytes: 5\nproxy:\n  https: socks://x\ntls:\n  caFile: /nonexistent/ca.pem\nlogLevel: loud\n",
  );
  const { code, stdout, stderr } = await runCli(["validate", "--config", path], { env: { PLATFORM_LICENSE_KEY: "k", EGRESS_CONFIG: "" } });
  assert.equal(code, 2);
  assert.equal(stdout, "");
  const problems = stderr.split("\n").filter((line) => line.startsWith("  "));
  for (const expected of [
    /^ {2}limits\.batchTransactions: /,
    /^ {2}limits\.batchBytes: unknown key$/,
    /^ {2}proxy\.https: must be an http\(s\) URL$/,
    /^ {2}logLevel: /,
  ]) {
    assert.ok(
      problems.some((line) => expected.test(line)),
      `${expected} in:\n${stderr}`,
    );
  }
  // A file a key names is only read once the keys are valid; alone, a missing CA file is named too.
  writeFileSync(path, "tls:\n  caFile: /nonexistent/ca.pem\n");
  const missing = await runCli(["validate", "--config", path], { env: { PLATFORM_LICENSE_KEY: "k", EGRESS_CONFIG: "" } });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /tls\.caFile: cannot read \/nonexistent\/ca\.pem \(ENOENT\)/);
});

test("a plain-http beaconUrl to a host that is not loopback: exit 2 naming beaconUrl and the fix, unless allowInsecureBeaconUrl", async () => {
  const dir = tempDir();
  const path = join(dir, "egress.yaml");
  const validate = (beaconUrl: string, extra = "", env: NodeJS.ProcessEnv = {}) => {
    writeFileSync(path, `beaconUrl: "${beaconUrl}"\n${extra}`);
    return runCli(["validate", "--config", path], { env: { PLATFORM_LICENSE_KEY: "k", EGRESS_CONFIG: "", ...env } });
  };
  // The license key would cross the network in clear; a name that merely starts like a loopback one is not one.
  for (const url of ["http://beacon:8080", "http://10.0.0.5/", "http://127.0.0.1.evil.example/", "http://localhost.evil.example/"]) {
    const { code, stdout, stderr } = await validate(url);
    assert.equal(code, 2, url);
    assert.equal(stdout, "", url);
    assert.match(stderr, /beaconUrl: http:\/\/ to \S+ would send the license key in clear; use https:\/\//, url);
    assert.match(stderr, /allowInsecureBeaconUrl: true \(env EGRESS_ALLOW_INSECURE_BEACON_URL=true\)/, url);
  }
  const fromEnv = await validate("https://beacon.vendor.test", "", { BEACON_URL: "http://beacon.vendor.test" });
  assert.equal(fromEnv.code, 2);
  assert.match(fromEnv.stderr, /beaconUrl: http:\/\/ to beacon\.vendor\.test would send the license key in clear/);

  for (const url of [
    "https://beacon.vendor.test",
    "http://127.0.0.1:8080",
    "http://127.3.2.1/",
    "http://localhost:8080",
    "http://[::1]:8080",
  ]) {
    const { code, stderr } = await validate(url);
    assert.equal(code, 0, `${url}: ${stderr}`);
  }
  const allowed = await validate("http://beacon:8080", "allowInsecureBeaconUrl: true\n");
  assert.equal(allowed.code, 0, allowed.stderr);
  assert.deepEqual(row(allowed.stdout, "allowInsecureBeaconUrl"), ["true", "file"]);
  const allowedByEnv = await validate("http://beacon:8080", "", { EGRESS_ALLOW_INSECURE_BEACON_URL: "true" });
  assert.equal(allowedByEnv.code, 0, allowedByEnv.stderr);
  assert.deepEqual(row(allowedByEnv.stdout, "allowInsecureBeaconUrl"), ["true", "env EGRESS_ALLOW_INSECURE_BEACON_URL"]);
});
