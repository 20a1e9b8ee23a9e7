import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { test } from "node:test";
import Database from "better-sqlite3";
import { privacyPolicy } from "../../src/sidecar/privacy/policy.ts";
import { processExport } from "../../src/sidecar/sources/otlp-export.ts";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { metricsRequestOfPoints, testLicense } from "../helpers/fixtures.ts";
import { agentConfig, beaconConfig, startAgentProcess, startBeacon, waitFor } from "../helpers/processes.ts";

const license = testLicense();
const REQUESTS = 400;
const POINTS = 200;

/** What the sidecar's intake keeps of an instance's metrics request of POINTS points: a telemetry record. */
function keptRecord(): { body: Buffer; items: number } {
  const request = metricsRequestOfPoints(POINTS, (i) => [
    { key: "endpoint", value: { stringValue: `/threads/${randomUUID()}/runs/${i}` } },
    { key: "method", value: { stringValue: "POST" } },
    { key: "service_name", value: { stringValue: "backend" } },
  ]);
  const outcome = processExport("metrics", Buffer.from(JSON.stringify(request)), {
    decodeProtobuf: undefined,
    enabled: true,
    policy: privacyPolicy(),
  });
  assert.ok(outcome.kind === "parsed" && outcome.kept);
  return outcome.kept;
}

function storedPoints(beaconDataDir: string): number {
  const db = new Database(join(beaconDataDir, "beacon.db"), { readonly: true });
  try {
    return (db.prepare("SELECT coalesce(sum(item_count), 0) AS n FROM otlp_batches WHERE signal = 'metrics'").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

// The shipped defaults on both sides: a telemetry backlog goes in batches of `limits.telemetryBatchBytes`, several in
// flight, to a beacon that charges each body about three times its bytes against its 8 MiB body budget. With 4 MiB
// batches it refused three of every four (503, Retry-After 1 s) and the backlog crawled at one batch a second.
test("a telemetry backlog drains to a default beacon with none of its batches refused for the beacon's body budget", async () => {
  const beaconFixture = beaconConfig([license]);
  const fixture = agentConfig("http://127.0.0.1:9", { selfTelemetry: { enabled: false } });
  const kept = keptRecord();
  const { body } = kept;
  assert.ok(body.length * REQUESTS > 16 << 20, `a backlog of several 4 MiB batches (${body.length * REQUESTS} bytes)`);
  const outbox = new Outbox(fixture.dataDir);
  outbox.enqueue(
    "metrics",
    Array.from({ length: REQUESTS }, () => ({ body })),
  );
  outbox.close();
  const beacon = await startBeacon(beaconFixture);
  try {
    const agent = await startAgentProcess(agentConfig(beacon.url, { selfTelemetry: { enabled: false } }, fixture.dir), {
      PLATFORM_LICENSE_KEY: license.key,
    });
    try {
      await waitFor(() => storedPoints(beaconFixture.dataDir) === REQUESTS * kept.items, 60_000, "every point at the beacon");
      const answers = beacon
        .output()
        .split("\n")
        .filter((line) => line.includes('"url":"/v1/beacon/v1/metrics"') && line.includes('"statusCode"'))
        .map((line) => (JSON.parse(line) as { statusCode: number }).statusCode);
      assert.ok(answers.length >= 6, `${answers.length} requests`);
      // Nothing refused for the body budget (503), nor sent before the license's first verify gave a token (401).
      assert.deepEqual(
        answers.filter((status) => status !== 200),
        [],
        "every batch taken at its first attempt",
      );
      assert.doesNotMatch(agent.output(), /stream failing/);
    } finally {
      await agent.stop();
    }
  } finally {
    await beacon.stop();
  }
});
