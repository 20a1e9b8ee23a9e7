import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { gzipSync } from "node:zlib";
import { metricsRequest, testLicense, traceTransactions } from "../helpers/fixtures.ts";
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
import { otlpProtoTypes } from "../../src/protocol/otlp-proto-schema.ts";

const license = testLicense();
const hook = new URL("../fixtures/hooks/record-modules.mjs", import.meta.url).href;

/** The modules a command loaded, as paths under the repository (src/..., node_modules/...). */
function loaded(file: string): Set<string> {
  const root = new URL("../../", import.meta.url).href;
  return new Set(
    readFileSync(file, "utf8")
      .split("\n")
      .filter((url) => url.startsWith(root))
      .map((url) => url.slice(root.length)),
  );
}

/** The other products in this repository, and what only they use: a sidecar has no business loading any of it. */
const OTHER_PRODUCTS = [/^src\/beacon\//, /^src\/a2a\//, /^src\/controlplane\//, /^src\/demo/, /^node_modules\/@langchain\//];

// The sidecar runs beside every customer's instance: its memory, its start-up and what a security review must read
// are what it loads. The CLI's command table is shared (each command's options are declared up front), so the
// baseline is what `--help` loads; starting the sidecar and serving every kind of traffic must add nothing of the
// beacon, the agent server, the control plane or the demo.
test("a running sidecar loads nothing of the beacon, the agent server or the control plane beyond the CLI's command table", async () => {
  const dir = tempDir();
  const helpFile = join(dir, "help-modules.txt");
  const startFile = join(dir, "start-modules.txt");
  const env = { NODE_OPTIONS: `--import ${hook}` };
  const help = await runCli(["--help"], { env: { ...env, EGRESS_TEST_MODULES_FILE: helpFile } });
  assert.equal(help.code, 0, help.stderr);

  const beacon = await startBeacon(beaconConfig([license]));
  try {
    const agent = await startAgentProcess(agentConfig(beacon.url), {
      ...env,
      EGRESS_TEST_MODULES_FILE: startFile,
      PLATFORM_LICENSE_KEY: license.key,
    });
    try {
      // Billing, OTLP as JSON, gzipped and protobuf, status and metrics: each lazily loaded part of the sidecar.
      const billing = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(3) });
      assert.equal(billing.status, 202);
      const json = await fetch(`${agent.url}/v1/metrics`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-encoding": "gzip" },
        body: gzipSync(JSON.stringify(metricsRequest())),
      });
      assert.equal(json.status, 200);
      const type = otlpProtoTypes.requests.metrics;
      const protobuf = await fetch(`${agent.url}/v1/metrics`, {
        method: "POST",
        headers: { "content-type": "application/x-protobuf" },
        body: type.encode(type.fromObject(metricsRequest())).finish(),
      });
      assert.equal(protobuf.status, 200);
      assert.equal((await fetch(`${agent.url}/metrics`)).status, 200);
      await waitFor(async () => (await getJson(`${agent.url}/v1/status`)).streams.billing.completed === 3, 15_000, "billing delivered");
    } finally {
      await agent.stop();
    }
  } finally {
    await beacon.stop();
  }

  const baseline = loaded(helpFile);
  const started = loaded(startFile);
  assert.ok(started.has("src/sidecar/daemon.ts") && started.has("src/protocol/otlp-protobuf.ts"), "the hook saw the sidecar's modules");
  const added = [...started].filter((path) => !baseline.has(path) && OTHER_PRODUCTS.some((pattern) => pattern.test(path)));
  assert.deepEqual(added, []);
});
