import assert from "node:assert/strict";
import { readFileSync, rmSync } from "node:fs";
import { after, test } from "node:test";
import { buildDist } from "../../scripts/build.ts";
import { storedTransactions } from "../helpers/beacon-db.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { agentConfig, beaconConfig, getJson, postJson, startAgentProcess, startBeacon, useCli, waitFor } from "../helpers/processes.ts";

// The image runs the bundle `npm run build` makes, not src/: build one (inside the repository, so better-sqlite3
// resolves from node_modules as in the image) and run the real beacon and sidecar from it.
const out = new URL(`../../.build-test-${process.pid}/`, import.meta.url).pathname;
after(() => rmSync(out, { recursive: true, force: true }));

test("the bundle npm run build makes runs the beacon and the sidecar: transactions and telemetry are delivered", async () => {
  await buildDist(out);
  // The image installs only what the bundle leaves out, with the repository's overrides (without them LangGraph's
  // checkpointer got a better-sqlite3 of its own with no prebuilt binary, and `a2a serve` failed in the image).
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  const runtime = JSON.parse(readFileSync(`${out}runtime-package.json`, "utf8"));
  assert.deepEqual(
    Object.keys(runtime.dependencies).sort(),
    Object.keys(pkg.dependencies)
      .filter((name) => /^(better-sqlite3|pg|@langchain\/)/.test(name))
      .sort(),
  );
  assert.deepEqual(runtime.overrides, pkg.overrides);
  assert.equal(runtime.type, "module");
  useCli(`${out}cli.js`);
  const license = testLicense();
  const beaconFixture = beaconConfig([license]);
  const beacon = await startBeacon(beaconFixture);
  const agent = await startAgentProcess(agentConfig(beacon.url), { PLATFORM_LICENSE_KEY: license.key });
  try {
    const batch = traceTransactions(5);
    assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch })).status, 202);
    const metrics = {
      resourceMetrics: [
        {
          scopeMetrics: [
            { metrics: [{ name: "m", description: "slow requests by tenant", gauge: { dataPoints: [{ timeUnixNano: "1", asInt: 2 }] } }] },
          ],
        },
      ],
    };
    assert.equal((await postJson(`${agent.url}/v1/metrics`, metrics)).status, 200);
    await waitFor(async () => (await getJson(`${agent.url}/v1/status`)).streams.billing.completed === 5, 15_000, "5 delivered");
    assert.deepEqual([...storedTransactions(beaconFixture.dataDir).keys()].sort(), batch.map((t) => t.id).sort());
    // The OTLP path loads a lazily split chunk (protobuf) only on demand; the JSON one must work from the bundle too,
    // and its privacy filter reads the English word list from the file beside the bundle (the description's words).
    await waitFor(async () => (await getJson(`${agent.url}/v1/status`)).streams.metrics.pending === 0, 15_000, "metrics sent");
  } finally {
    await agent.stop();
    await beacon.stop();
  }
});
