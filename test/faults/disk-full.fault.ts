import assert from "node:assert/strict";
import { rmSync, statfsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import { DELIVERY_RESERVE_BYTES } from "../../src/sidecar/storage/disk-space.ts";
import type { AgentStatus, StreamStatus } from "../../src/protocol/local-api.ts";
import { storedTransactions } from "../helpers/beacon-db.ts";
import { metricsRequest, testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { FaultProxy } from "../helpers/fault-proxy.ts";
import { agentConfig, beaconConfig, getJson, postJson, startBeacon, waitFor, type ServiceProcess } from "../helpers/processes.ts";
import { fillUp, startAgentOnTmpfs, tmpfsUnavailable } from "../helpers/tmpfs.ts";

const unavailable = tmpfsUnavailable();
const MiB = 2 ** 20;

async function billing(agentUrl: string): Promise<StreamStatus> {
  return ((await getJson(`${agentUrl}/v1/status`)) as AgentStatus).streams.billing!;
}

/** Waits until every billing record the sidecar holds is delivered and `completed` reaches `total`. */
function delivered(agentUrl: string, total: number) {
  return waitFor(
    async () => {
      const b = await billing(agentUrl);
      return b.pending + b.sending === 0 && b.completed === total ? b : undefined;
    },
    30_000,
    `${total} billing records delivered`,
  );
}

/** The beacon holds exactly `expected`, each once: same count, every one of them, none of `absent`. */
function assertBeaconHolds(beaconDataDir: string, expected: Set<string>, absent: string[]): void {
  const stored = storedTransactions(beaconDataDir);
  assert.equal(stored.size, expected.size, "the beacon holds as many transactions as were accepted");
  const missing = [...expected].filter((id) => !stored.has(id));
  assert.deepEqual(missing.slice(0, 3), [], `${missing.length} accepted transactions never reached the beacon`);
  assert.deepEqual(absent.filter((id) => stored.has(id)).slice(0, 3), [], "a transaction refused with 507 reached the beacon");
}

test("disk full on the data dir: 507 (never 500) without losing an accepted record, OTLP dropped as a 200 partial success, " +
  "delivery survives a completely full disk, everything accepted reaches the beacon once, intake resumes once space is freed", {
  skip: unavailable && `needs a private tmpfs for the data dir: ${unavailable}`,
}, async () => {
  const license = testLicense();
  const beaconAddress = await FaultProxy.refusing({ keepBodies: false }); // the beacon comes up later; until then: unreachable
  const beaconFixture = beaconConfig([license]);
  const fixture = agentConfig(beaconAddress.url, { usageReporting: false, selfTelemetry: { enabled: false } });
  // A volume just larger than the sidecar's delivery reserve (16 MiB): 24 MiB.
  const agent = await startAgentOnTmpfs(fixture, `${DELIVERY_RESERVE_BYTES / MiB + 8}m`, { PLATFORM_LICENSE_KEY: license.key });
  let beacon: ServiceProcess | undefined;
  try {
    const free = () => {
      const stats = statfsSync(agent.dataDir);
      return stats.bavail * stats.bsize;
    };
    const post = (batch: { id: string }[]) => postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch });
    // Another tenant of the volume: about 4 MiB are left above what the sidecar keeps for delivery.
    writeFileSync(join(agent.dataDir, "filler-1"), Buffer.alloc(free() - DELIVERY_RESERVE_BYTES - 4 * MiB));

    // 1. Intake until the disk is full: 202 or 507, nothing else; the 507 says what to do.
    const accepted = new Set<string>();
    const refused: ReturnType<typeof traceTransactions>[] = [];
    while (refused.length < 3) {
      const batch = traceTransactions(200);
      const response = await post(batch);
      if (response.status === 202) for (const t of batch) accepted.add(t.id);
      else {
        assert.equal(response.status, 507, `POST /v1/transactions answered ${response.status}: ${JSON.stringify(response.body)}`);
        assert.equal(response.body.code, "EGRESS_ERR_DISK_FULL");
        assert.match(response.body.detail, /nothing of this batch was stored: free space/);
        refused.push(batch);
      }
      assert.ok(accepted.size < 50_000, "the data dir never filled up");
    }
    assert.ok(accepted.size > 0, "the sidecar took transactions while there was room");
    assert.equal((await fetch(`${agent.url}/healthz`)).status, 200);
    const held = await billing(agent.url);
    assert.equal(held.pending + held.sending, accepted.size, "every accepted record is held, none lost");

    // 2. The disk fills up completely. A tool checkpoints the WAL into outbox.db and truncates it (as backup
    // tools do), then another tenant takes every block left: any write of the sidecar (a claim, an ack, an audit
    // entry, the license token cache) must grow a file, and hits SQLITE_FULL.
    await waitFor(
      async () => {
        const db = new Database(join(agent.dataDir, "outbox.db"));
        try {
          return (db.pragma("wal_checkpoint(TRUNCATE)") as { busy: number }[])[0]!.busy === 0;
        } finally {
          db.close();
        }
      },
      10_000,
      "the WAL checkpointed and truncated",
    );
    fillUp(join(agent.dataDir, "filler-2"));
    // The shipper (still failing to reach the beacon) cannot even record its failed attempts: it says so, and lives on.
    await waitFor(
      async () => /data dir full/.test((await billing(agent.url)).lastError?.message ?? ""),
      20_000,
      "the shipper reporting the full disk",
    );
    assert.equal((await post(traceTransactions(5))).status, 507);
    const otlp = await postJson(`${agent.url}/v1/metrics`, metricsRequest());
    assert.equal(otlp.status, 200, "OTLP: not retryable (best-effort telemetry), so 200 with a partial success");
    assert.ok(otlp.body.partialSuccess?.rejectedDataPoints > 0, JSON.stringify(otlp.body));
    assert.match(otlp.body.partialSuccess.errorMessage, /data dir is full/);
    const metrics = await (await fetch(`${agent.url}/metrics`)).text();
    assert.match(metrics, /egress_telemetry_dropped_items_total\{signal="metrics",reason="disk_full"\} [1-9]/);

    beacon = await startBeacon(beaconFixture);
    beaconAddress.forwardTo(beacon.url);
    // The sidecar meets the beacon on the full disk: the license verifies (should its token cache or audit entry
    // not fit, that is logged, not fatal), delivery goes as far as the disk lets it, and the process lives on.
    await waitFor(
      async () => ((await getJson(`${agent.url}/v1/status`)) as AgentStatus).license.state === "valid",
      20_000,
      "license verified",
    );
    assert.equal((await fetch(`${agent.url}/healthz`)).status, 200);

    // 3. The other tenant's file goes; the sidecar is still below its reserve: it delivers, but takes no more.
    rmSync(join(agent.dataDir, "filler-2"));
    await delivered(agent.url, accepted.size);
    assertBeaconHolds(
      beaconFixture.dataDir,
      accepted,
      refused.flat().map((t) => t.id),
    );
    assert.equal((await post(traceTransactions(5))).status, 507, "delivering frees no space: still refused");

    // 4. Space is freed: intake resumes without a restart; a re-posted refused batch counts once, like any other.
    rmSync(join(agent.dataDir, "filler-1"));
    const fresh = traceTransactions(50);
    for (const batch of [refused[0]!, fresh]) {
      assert.equal((await post(batch)).status, 202);
      for (const t of batch) accepted.add(t.id);
    }
    await delivered(agent.url, accepted.size);
    assertBeaconHolds(
      beaconFixture.dataDir,
      accepted,
      refused
        .slice(1)
        .flat()
        .map((t) => t.id),
    );

    const log = agent.output();
    assert.match(log, /data dir full: billing intake refused with 507/);
    assert.match(log, /data dir has room again[^"]*: intake resumed/);
    assert.doesNotMatch(log, /"level":50.*"msg":"request failed"/, "no request ended in a 500");
    assert.equal(agent.child.exitCode, null, "the same sidecar process throughout");
    assert.equal(await agent.stop(), 0);
  } finally {
    await agent.stop("SIGKILL");
    await beacon?.stop();
    await beaconAddress.close();
  }
});
