import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { AuditListing } from "../../src/protocol/audit.ts";
import { AgentStatus } from "../../src/protocol/local-api.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { FaultProxy } from "../helpers/fault-proxy.ts";
import {
  agentConfig,
  beaconConfig,
  getJson,
  NOWHERE,
  postJson,
  runCli,
  startAgentProcess,
  startBeacon,
  waitFor,
} from "../helpers/processes.ts";
import { postOtlp, promValue, taggedRequest } from "../helpers/telemetry.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

test("every request to the beacon is in the audit log with its digest; kept bodies and all output carry no secret", async (t) => {
  const license = testLicense();
  const beacon = await startBeacon(beaconConfig([license]));
  const fixture = agentConfig(beacon.url, { audit: { keepBodies: true } });
  const agent = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: license.key });
  t.after(async () => {
    await agent.stop();
    await beacon.stop();
  });

  assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(30) })).status, 202);
  assert.equal((await postOtlp(agent.url, "metrics", taggedRequest("metrics", "audit-check"))).status, 200);
  const listing = await waitFor(
    async () => {
      const body = AuditListing.parse(await getJson(`${agent.url}/v1/audit`));
      const streams = new Set(body.entries.filter((e) => e.status === 200).map((e) => e.stream));
      return streams.has("license") && streams.has("billing") && streams.has("metrics") ? body : undefined;
    },
    15_000,
    "license, billing and metrics sends audited",
  );

  const billing = listing.entries.find((e) => e.stream === "billing")!;
  assert.equal(billing.destination, `${beacon.url}/v1/beacon/ingest-traces`);
  assert.equal(billing.path, "/v1/beacon/ingest-traces");
  assert.equal(billing.records, 30);
  assert.ok(billing.body, "audit.keepBodies keeps the body");
  assert.ok(!billing.body.includes(license.key), "the license key is redacted in the kept body");
  // The digest is of the bytes that went out, license key included: put it back and the digests agree.
  const sent = billing.body.replaceAll("[REDACTED]", license.key);
  assert.equal(billing.bytes, Buffer.byteLength(sent));
  assert.equal(billing.sha256, sha256(sent));
  const metrics = listing.entries.find((e) => e.stream === "metrics")!;
  assert.equal(metrics.sha256, sha256(metrics.body!), "a body without secrets is kept exactly as sent");
  assert.match(metrics.body!, /audit-check/); // a marker of words: the privacy filter keeps those

  // Filters and paging of the route, and its 422 for a bad query naming the parameter.
  const onlyBilling = AuditListing.parse(await getJson(`${agent.url}/v1/audit?stream=billing`));
  assert.ok(onlyBilling.entries.length >= 1 && onlyBilling.entries.every((e) => e.stream === "billing"));
  const firstPage = AuditListing.parse(await getJson(`${agent.url}/v1/audit?limit=1`));
  assert.equal(firstPage.entries.length, 1);
  assert.equal(firstPage.truncated, true);
  const nextPage = AuditListing.parse(await getJson(`${agent.url}/v1/audit?limit=1&after=${firstPage.entries[0]!.id}`));
  assert.ok(nextPage.entries[0]!.id > firstPage.entries[0]!.id);
  assert.equal(AuditListing.parse(await getJson(`${agent.url}/v1/audit?since=2999-01-01T00:00:00Z`)).entries.length, 0);
  const bad = await fetch(`${agent.url}/v1/audit?limit=0&stream=mail`);
  assert.equal(bad.status, 422);
  const locs = ((await bad.json()) as { detail: { loc: string[] }[] }).detail.map((d) => d.loc.join("."));
  assert.deepEqual(locs.sort(), ["query.limit", "query.stream"]);

  // The CLI reads the same, from the running sidecar and from the data dir.
  const cli = await runCli(["audit", "--url", agent.url, "--stream", "billing", "--json"]);
  assert.equal(cli.code, 0, cli.stderr);
  const lines = cli.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { stream: string; sha256: string });
  assert.ok(lines.length >= 1 && lines.every((entry) => entry.stream === "billing"));
  assert.equal(lines[0]!.sha256, billing.sha256);
  const fromDisk = await runCli(["audit", "--data-dir", fixture.dataDir, "--since", "2000-01-01"]);
  assert.equal(fromDisk.code, 0, fromDisk.stderr);
  assert.match(fromDisk.stdout, /^TIME\s+STREAM\s+DESTINATION/);
  assert.match(fromDisk.stdout, new RegExp(`billing\\s+${beacon.url}/v1/beacon/ingest-traces\\s+30\\s+\\d+\\s+200\\s+${billing.sha256}`));

  const status = await runCli(["status", "--url", agent.url]);
  assert.equal(status.code, 0, status.stderr);
  // The license's own end (the test license runs to 2099), then the hour-long token's: never the token's as the license's.
  assert.match(status.stdout, /^license: valid \(online\) {2}id acme-prod {2}expires 2099-12-31T00:00:00\.000Z \(token until \d{4}-\S+\)/);
  assert.match(status.stdout, /\nbilling\s+yes\s+0\s+0\s+-\s+30\s+0\s+\d{4}-/);
  assert.match(status.stdout, /\nusage\s+yes\s/);
  const statusJson = await runCli(["status", "--url", agent.url, "--json"]);
  const parsed = AgentStatus.parse(JSON.parse(statusJson.stdout));
  assert.equal(parsed.streams.billing!.completed, 30);
  assert.equal(parsed.license.licenseExpiresAt, "2099-12-31T00:00:00.000Z");
  assert.ok(Date.parse(parsed.license.expiresAt!) < Date.now() + 2 * 3_600_000, "the token's own expiry is near");

  // Kubernetes probes: alive, and ready with the config loaded and the outbox open.
  assert.deepEqual(await getJson(`${agent.url}/healthz`), { status: "ok" });
  assert.deepEqual(await getJson(`${agent.url}/readyz`), { ready: true });

  // The same sends, counted for Prometheus.
  assert.equal(await promValue(agent.url, 'egress_records_sent_total{stream="billing"}'), 30);
  assert.ok((await promValue(agent.url, 'egress_beacon_requests_total{stream="license",outcome="2xx"}')) >= 1);
  assert.ok((await promValue(agent.url, 'egress_beacon_request_duration_seconds_count{stream="billing"}')) >= 1);
  assert.equal(await promValue(agent.url, 'egress_license_state{state="valid"}'), 1);
  assert.equal(await promValue(agent.url, 'egress_license_state{state="grace"}'), 0);
  assert.ok((await promValue(agent.url, "egress_license_expiry_timestamp_seconds")) * 1000 > Date.now());
  assert.equal(await promValue(agent.url, 'egress_outbox_records{stream="billing",state="completed"}'), 30);
  assert.equal(await promValue(agent.url, 'egress_outbox_oldest_pending_age_seconds{stream="billing"}'), 0);

  const everything = [cli.stdout, fromDisk.stdout, status.stdout, statusJson.stdout, JSON.stringify(listing), agent.output()].join("\n");
  assert.ok(!everything.includes(license.key), "no license key anywhere");
  assert.doesNotMatch(everything, /eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+/, "no token anywhere");
});

test("status and audit name the sidecar they cannot reach and exit 1", async () => {
  for (const command of ["status", "audit"]) {
    const { code, stderr } = await runCli([command, "--url", NOWHERE]);
    assert.equal(code, 1);
    assert.match(stderr, new RegExp(`cannot reach the sidecar at ${NOWHERE} \\(ECONNREFUSED\\): is it running\\?`));
  }
});

test("status --follow shows a backlog draining and exits 0 once nothing is left", async (t) => {
  const license = testLicense();
  const beaconAddress = await FaultProxy.refusing();
  t.after(() => beaconAddress.close());
  const fixture = agentConfig(beaconAddress.url, {
    limits: { batchTransactions: 100 },
    usageReporting: false,
    selfTelemetry: { enabled: false },
  });
  const agent = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: license.key });
  t.after(() => agent.stop());
  assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(600) })).status, 202);

  let shown = "";
  const following = runCli(["status", "--url", agent.url, "--follow", "--interval", "0.2"], { onStdout: (stdout) => (shown = stdout) });
  await waitFor(() => shown.split("\n").length > 3, 10_000, "a few lines while the beacon is away");
  const beacon = await startBeacon(beaconConfig([license]));
  t.after(() => beacon.stop());
  beaconAddress.forwardTo(beacon.url);
  const { code, stdout, stderr } = await following;
  assert.equal(code, 0, stderr);
  const lines = stdout.trim().split("\n");
  assert.match(lines[0]!, /^600 left \(billing 600\)$/);
  assert.match(lines[1]!, /^600 left \(billing 600\), 0\/s, waiting$/);
  assert.equal(lines.at(-1), "drained: nothing left to deliver");
  assert.equal(AgentStatus.parse(await getJson(`${agent.url}/v1/status`)).streams.billing!.completed, 600);
});
