import assert from "node:assert/strict";
import { testLicense, type TestLicense } from "../helpers/fixtures.ts";
import {
  agentConfig,
  beaconConfig,
  startAgentProcess,
  startBeacon,
  type AgentFixture,
  type BeaconFixture,
  type ServiceProcess,
} from "../helpers/processes.ts";

/** Body limit of both processes in this suite: small enough to exceed cheaply, large enough for 100k-deep JSON. */
export const BODY_LIMIT = 1024 * 1024;

export interface Pair {
  license: TestLicense;
  beacon: ServiceProcess;
  beaconFixture: BeaconFixture;
  agent: ServiceProcess;
  agentFixture: AgentFixture;
}

/** A real beacon and a real sidecar reporting to it, as child processes; the sidecar's own telemetry is off so
 * that nothing but the test's requests lands in its outbox. */
export async function startPair(): Promise<Pair> {
  const license = testLicense();
  const beaconFixture = beaconConfig([license], { bodyLimit: "1MiB" });
  const beacon = await startBeacon(beaconFixture);
  const agentFixture = agentConfig(beacon.url, { limits: { bodyLimit: "1MiB" }, selfTelemetry: { enabled: false } });
  const agent = await startAgentProcess(agentFixture, { PLATFORM_LICENSE_KEY: license.key }).catch(async (err) => {
    await beacon.stop();
    throw err;
  });
  return { license, beacon, beaconFixture, agent, agentFixture };
}

/**
 * Stops both with SIGTERM and checks what a user would see of the bad input afterwards: both were still up
 * (exit 0, not a crash), no request ended in a 500 ("request failed" is logged only for those), and the
 * license key was never echoed.
 */
export async function stopPair(pair: Pair | undefined): Promise<void> {
  if (!pair) return;
  const codes = [await pair.agent.stop("SIGTERM"), await pair.beacon.stop("SIGTERM")];
  assert.deepEqual(codes, [0, 0], "both processes were still up and stopped cleanly");
  for (const [name, service] of [
    ["sidecar", pair.agent],
    ["beacon", pair.beacon],
  ] as const) {
    const output = service.output();
    assert.ok(!output.includes('"msg":"request failed"'), `no request ended in a 500 at the ${name}:\n${output.slice(-2000)}`);
    assert.ok(!output.includes(pair.license.key), `the ${name} never logged the license key`);
  }
}
