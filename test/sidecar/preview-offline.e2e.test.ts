import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import packageJson from "../../package.json" with { type: "json" };
import { AuditListing } from "../../src/protocol/audit.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { offlineLicenseFiles } from "../helpers/offline-license.ts";
import { FaultProxy } from "../helpers/fault-proxy.ts";
import {
  agentConfig,
  beaconConfig,
  getJson,
  postJson,
  runCli,
  startAgentProcess,
  startBeacon,
  tempDir,
  waitFor,
} from "../helpers/processes.ts";

const DAY = 86_400_000;

test("preview prints exactly the next request of each stream, license redacted: the beacon then receives that body", async (t) => {
  const license = testLicense();
  const beaconAddress = await FaultProxy.refusing();
  t.after(() => beaconAddress.close());
  const beaconUrl = beaconAddress.url;
  // No beacon yet: the sidecar keeps the records, with their failed-send counts.
  const fixture = agentConfig(beaconUrl, {
    limits: { batchTransactions: 2 },
    audit: { keepBodies: true },
    usageReporting: false,
    selfTelemetry: { enabled: false },
  });
  const env = { PLATFORM_LICENSE_KEY: license.key };
  const offlineBeacon = await startAgentProcess(fixture, env);
  const batch = traceTransactions(3);
  assert.equal((await postJson(`${offlineBeacon.url}/v1/transactions`, { trace_transactions: batch })).status, 202);
  await waitFor(async () => (await getJson(`${offlineBeacon.url}/v1/status`)).streams.billing.lastError, 10_000, "a failed send");
  await offlineBeacon.stop();

  const preview = await runCli(["preview", "--config", fixture.configPath, "--json"], { env });
  assert.equal(preview.code, 0, preview.stderr);
  assert.ok(!preview.stdout.includes(license.key));
  const payloads = JSON.parse(preview.stdout) as { stream: string; url: string; records: number; headers: unknown; payload: any }[];
  assert.deepEqual(
    payloads.map((p) => p.stream),
    ["license", "billing", "metrics", "traces", "logs"],
  );
  assert.deepEqual(payloads[0]!.payload, { license: "[REDACTED]" });
  // Who sends: the instance id the sidecar made at its first start, and its version and mode, on every request.
  const instanceId = readFileSync(join(fixture.dataDir, "instance-id"), "utf8").trim();
  for (const p of payloads) {
    assert.deepEqual(p.headers, { "User-Agent": `egress-agent/${packageJson.version} (online)`, "X-Egress-Instance-Id": instanceId });
  }
  const billing = payloads.find((p) => p.stream === "billing")!;
  assert.equal(billing.url, `${beaconUrl}/v1/beacon/ingest-traces`);
  assert.equal(billing.records, 2, "limits.batchTransactions");
  assert.equal(billing.payload.license, "[REDACTED]");
  assert.deepEqual(
    billing.payload.trace_transactions.map((tx: { id: string }) => tx.id),
    batch.slice(0, 2).map((tx) => tx.id),
  );
  assert.ok(billing.payload.trace_transactions.every((tx: { num_failed_send_attempts: number }) => tx.num_failed_send_attempts >= 1));

  const human = await runCli(["preview", "--config", fixture.configPath], { env });
  assert.match(
    human.stdout,
    new RegExp(
      `# billing: POST ${beaconUrl}/v1/beacon/ingest-traces \\(2 records queued for the next request\\)\\n` +
        `User-Agent: egress-agent/${packageJson.version} \\(online\\)\\nX-Egress-Instance-Id: ${instanceId}\\n\\{\\n  "license": "\\[REDACTED\\]"`,
    ),
  );
  assert.match(
    human.stdout,
    /# traces: POST \S+ \(0 records queued for the next request\)\nUser-Agent: .*\nX-Egress-Instance-Id: .*\n\(nothing queued\)/,
  );

  // The beacon comes up; the request that carries the previewed batch is the previewed one, byte for byte (bar the
  // key). Billing sends several batches at once (limits.sendConcurrency), so the third record's may be answered first.
  const beacon = await startBeacon(beaconConfig([license]));
  t.after(() => beacon.stop());
  beaconAddress.forwardTo(beacon.url);
  const agent = await startAgentProcess(fixture, env);
  t.after(() => agent.stop());
  const sent = await waitFor(
    async () => {
      const { entries } = AuditListing.parse(await getJson(`${agent.url}/v1/audit?stream=billing`));
      return entries.find((entry) => entry.status === 200 && entry.body?.includes(batch[0]!.id));
    },
    10_000,
    "a delivered billing request",
  );
  assert.deepEqual(JSON.parse(sent.body!), billing.payload);
});

test("preview --destinations lists every destination of a config and the proxy it uses; none offline", async () => {
  const fixture = agentConfig("https://beacon.vendor.test", { config: { telemetry: { logs: false } }, usageReporting: true });
  const env = {
    PLATFORM_LICENSE_KEY: "k",
    HTTPS_PROXY: "http://ops:secret-pw@127.0.0.1:3128",
    HTTP_PROXY: "",
    NO_PROXY: "",
    https_proxy: "",
    http_proxy: "",
    no_proxy: "",
  };
  const { code, stdout, stderr } = await runCli(["preview", "--config", fixture.configPath, "--destinations", "--json"], { env });
  assert.equal(code, 0, stderr);
  assert.deepEqual(JSON.parse(stdout), [
    { stream: "license", url: "https://beacon.vendor.test/v1/beacon/verify", proxy: "http://REDACTED@127.0.0.1:3128/" },
    { stream: "billing", url: "https://beacon.vendor.test/v1/beacon/ingest-traces", proxy: "http://REDACTED@127.0.0.1:3128/" },
    { stream: "metrics", url: "https://beacon.vendor.test/v1/beacon/v1/metrics", proxy: "http://REDACTED@127.0.0.1:3128/" },
    { stream: "traces", url: "https://beacon.vendor.test/v1/beacon/v1/traces", proxy: "http://REDACTED@127.0.0.1:3128/" },
    { stream: "usage", url: "https://beacon.vendor.test/v1/beacon/usage-snapshot", proxy: "http://REDACTED@127.0.0.1:3128/" },
  ]);
  // NO_PROXY is decided by the same function the client uses: an exempt host shows as direct.
  const exempt = await runCli(["preview", "--config", fixture.configPath, "--destinations", "--json"], {
    env: { ...env, NO_PROXY: ".vendor.test" },
  });
  assert.deepEqual(new Set((JSON.parse(exempt.stdout) as { proxy: string | null }[]).map((d) => d.proxy)), new Set([null]));
  const other = await runCli(["preview", "--config", fixture.configPath, "--destinations"], { env: { ...env, NO_PROXY: "other.test" } });
  assert.match(other.stdout, /license\s+POST \S+\s+http:\/\/REDACTED@127\.0\.0\.1:3128\//);
  const usageOff = await runCli(["preview", "--config", fixture.configPath, "--destinations"], {
    env: { ...env, PHONE_HOME_USAGE_REPORTING_ENABLED: "false" },
  });
  assert.doesNotMatch(usageOff.stdout, /usage-snapshot/);
  assert.match(
    usageOff.stdout,
    /billing\s+POST https:\/\/beacon\.vendor\.test\/v1\/beacon\/ingest-traces\s+http:\/\/REDACTED@127\.0\.0\.1:3128\//,
  );
  // Credentials in beaconUrl never show, in the destinations nor in a preview of the payloads.
  const withCredentials = agentConfig("https://vendor:url-secret@beacon.vendor.test", { dataDir: join(tempDir(), "never-ran") });
  const previewed = await runCli(["preview", "--config", withCredentials.configPath, "--json"], { env });
  assert.equal(previewed.code, 0, previewed.stderr);
  assert.ok(!previewed.stdout.includes("url-secret"));
  assert.equal((JSON.parse(previewed.stdout) as { url: string }[])[1]!.url, "https://REDACTED@beacon.vendor.test/v1/beacon/ingest-traces");
  const offline = await runCli(["preview", "--config", fixture.configPath, "--destinations"], {
    env: { ...env, EGRESS_OFFLINE: "true" },
  });
  // Offline needs its license files to be a valid config at all.
  assert.equal(offline.code, 2);
  assert.match(offline.stderr, /offline\.licenseFile: required when offline\.enabled is true/);
});

async function offlineConfig(expiresInDays: number): Promise<string> {
  const dir = tempDir();
  const files = await offlineLicenseFiles(dir, testLicense({ expiresAt: new Date(Date.now() + expiresInDays * DAY).toISOString() }));
  const fixture = agentConfig("https://beacon.vendor.test", {}, dir);
  writeFileSync(
    fixture.configPath,
    readFileSync(fixture.configPath, "utf8") +
      `offline:\n  enabled: true\n  licenseFile: ${files.licenseFile}\n  publicKeyFile: ${files.publicKeyFile}\n`,
  );
  return fixture.configPath;
}

test("check-offline: exit 0 only for an offline config whose license verifies and lasts 30 more days; else exit 2 saying why", async () => {
  const safe = await runCli(["check-offline", "--config", await offlineConfig(200)], { env: { EGRESS_OFFLINE: "" } });
  assert.equal(safe.code, 0, safe.stderr);
  assert.match(
    safe.stdout,
    /^offline-safe:\n {2}offline license acme-prod verifies against offline\.publicKeyFile and expires \S+ \((199|200) days\)\n {2}no stream has a network destination/,
  );

  const expiring = await runCli(["check-offline", "--config", await offlineConfig(10)], { env: { EGRESS_OFFLINE: "" } });
  assert.equal(expiring.code, 2);
  assert.match(expiring.stderr, /offline\.licenseFile: expires \S+, within 30 days \((9|10) days left\)/);

  const online = agentConfig("https://beacon.vendor.test");
  const notOffline = await runCli(["check-offline", "--config", online.configPath], {
    env: { PLATFORM_LICENSE_KEY: "k", EGRESS_OFFLINE: "" },
  });
  assert.equal(notOffline.code, 2);
  const reasons = notOffline.stderr.split("\n").filter((line) => line.startsWith("  "));
  assert.equal(reasons[0], "  offline.enabled is false (set it to true, or EGRESS_OFFLINE=true)");
  assert.ok(reasons.includes("  billing can reach https://beacon.vendor.test/v1/beacon/ingest-traces"));

  // A license signed by someone else's key does not verify.
  const path = await offlineConfig(200);
  const stranger = await offlineLicenseFiles(tempDir());
  writeFileSync(path, readFileSync(path, "utf8").replace(/publicKeyFile: .*/, `publicKeyFile: ${stranger.publicKeyFile}`));
  const forged = await runCli(["check-offline", "--config", path], { env: { EGRESS_OFFLINE: "" } });
  assert.equal(forged.code, 2);
  assert.match(forged.stderr, /offline\.licenseFile: offline license /);
});
