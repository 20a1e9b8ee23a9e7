import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import { INSTANCE_ID_FILE } from "../../src/sidecar/storage/instance-id.ts";
import { ExportHeader } from "../../src/protocol/instance.ts";
import { TraceTransaction } from "../../src/protocol/trace-transaction.ts";
import { traceTransactions } from "../helpers/fixtures.ts";
import { postOtlp, promValue, taggedRequest } from "../helpers/telemetry.ts";
import { offlineLicenseFiles } from "../helpers/offline-license.ts";
import { agentConfig, getJson, postJson, runCli, startAgentProcess, tempDir } from "../helpers/processes.ts";

test("offline mode under load: no connection of any kind leaves, the license verifies locally, records export", async () => {
  // Every egress destination the config names is a listening server that counts connections.
  let connections = 0;
  const trap = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => trap.listen(0, "127.0.0.1", resolve));
  const trapUrl = `http://127.0.0.1:${(trap.address() as { port: number }).port}`;

  const fixture = agentConfig(trapUrl);
  const files = await offlineLicenseFiles(fixture.dir);
  writeFileSync(
    fixture.configPath,
    readFileSync(fixture.configPath, "utf8") +
      `offline:\n  enabled: true\n  licenseFile: ${files.licenseFile}\n  publicKeyFile: ${files.publicKeyFile}\n`,
  );
  const agent = await startAgentProcess(fixture, { HTTPS_PROXY: trapUrl, HTTP_PROXY: trapUrl, PLATFORM_LICENSE_KEY: files.license.key });
  try {
    const batches = Array.from({ length: 20 }, () => traceTransactions(100));
    await Promise.all(
      batches.map(async (batch) =>
        assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch })).status, 202),
      ),
    );
    // A UUID is one id in any letter case: the same records re-sent in upper case are duplicates, exported once.
    const shouted = batches[0]!.slice(0, 5).map((t) => ({ ...t, id: t.id.toUpperCase() }));
    const resent = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: shouted });
    assert.deepEqual([resent.status, resent.body], [202, { accepted: 5, duplicates: 5 }]);
    // Operational telemetry is off offline whatever the switches say: answered 200, dropped, counted.
    for (const signal of ["metrics", "traces", "logs"] as const) {
      const response = await postOtlp(agent.url, signal, taggedRequest(signal, "offline"));
      assert.deepEqual([response.status, response.body], [200, {}]);
    }
    // No event to await: what is tested is that nothing is queued or sent over thirty flush intervals (50 ms).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const status = await getJson(`${agent.url}/v1/status`);
    for (const signal of ["metrics", "traces", "logs"]) {
      assert.deepEqual([status.streams[signal].enabled, status.streams[signal].pending], [false, 0], `${signal} off offline`);
    }
    assert.equal(await promValue(agent.url, 'egress_telemetry_dropped_items_total{signal="logs",reason="switched_off"}'), 1);
    assert.equal(status.license.mode, "offline");
    assert.equal(status.license.state, "valid");
    assert.equal(status.license.licenseId, files.license.id);
    assert.deepEqual(
      [status.streams.billing.keptForExport, status.streams.billing.pending, status.streams.billing.oldestPendingAgeSeconds],
      [2000, 0, null],
      "kept for export, not a queue",
    );
    assert.equal(await promValue(agent.url, 'egress_outbox_oldest_pending_age_seconds{stream="billing"}'), 0, "no alert on a stuck queue");
    assert.equal(await promValue(agent.url, 'egress_outbox_records{stream="billing",state="kept_for_export"}'), 2000);
    const shown = await runCli(["status", "--url", agent.url]);
    assert.match(shown.stdout, /billing: 2000 records kept for export/);
    const follow = await runCli(["status", "--follow", "--url", agent.url]);
    assert.deepEqual(
      [follow.code, follow.stdout.trim()],
      [0, "drained: nothing left to deliver"],
      "--follow does not wait forever on records offline mode never sends",
    );
    assert.equal(connections, 0, "zero outbound connections in offline mode");
    assert.match(agent.output(), /"offline mode: no egress of any kind"/);

    const exported = await runCli(["export", "--since", "2026-01-01", "--config", fixture.configPath]);
    assert.equal(exported.code, 0, exported.stderr);
    const [first, ...lines] = exported.stdout.trim().split("\n");
    // The first line names the instance (the id the sidecar keeps in its data dir) and the offline license.
    const header = ExportHeader.parse(JSON.parse(first!));
    assert.deepEqual(
      [header.egress_export, header.instance_id, header.license_id, header.mode, header.since],
      [1, readFileSync(join(fixture.dataDir, INSTANCE_ID_FILE), "utf8").trim(), files.license.id, "offline", "2026-01-01T00:00:00.000Z"],
    );
    assert.equal(lines.length, 2000);
    for (const line of lines) assert.ok(TraceTransaction.safeParse(JSON.parse(line)).success);
    assert.match(exported.stderr, /exported 2000 billing records/);
    const none = await runCli(["export", "--since", "2027-01-01", "--config", fixture.configPath]);
    assert.deepEqual(
      none.stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line).instance_id),
      [header.instance_id],
      "the header line alone",
    );
    assert.equal(connections, 0);
    assert.equal(await agent.stop("SIGTERM"), 0);
  } finally {
    await agent.stop("SIGKILL");
    trap.close();
  }
});

test("offline mode with a license signed by another key is invalid, and input is still kept", async () => {
  const fixture = agentConfig("http://127.0.0.1:9");
  const ours = await offlineLicenseFiles(fixture.dir);
  const stranger = await offlineLicenseFiles(tempDir("other-vendor-"));
  writeFileSync(
    fixture.configPath,
    readFileSync(fixture.configPath, "utf8") +
      `offline:\n  enabled: true\n  licenseFile: ${stranger.licenseFile}\n  publicKeyFile: ${ours.publicKeyFile}\n`,
  );
  const agent = await startAgentProcess(fixture);
  try {
    const status = await getJson(`${agent.url}/v1/status`);
    assert.equal(status.license.state, "invalid");
    assert.match(status.license.lastError, /signature/);
    assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(3) })).status, 202);
  } finally {
    await agent.stop();
  }
});
