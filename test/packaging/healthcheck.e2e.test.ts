import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { testLicense } from "../helpers/fixtures.ts";
import { agentConfig, beaconConfig, runCli, startAgentProcess, startBeacon, tempDir } from "../helpers/processes.ts";

// The image's HEALTHCHECK is `egress-agent healthcheck`: it probes whichever service the container runs, on the
// port and path that service announced, so the beacon and the agent server from the same image are not unhealthy.

test("healthcheck probes the service that announced itself in EGRESS_HEALTH_FILE: beacon, then sidecar; 1 when none answers", async () => {
  const dir = tempDir();
  const healthFile = join(dir, "health");
  const env = { EGRESS_HEALTH_FILE: healthFile };
  const none = await runCli(["healthcheck"], { env });
  assert.equal(none.code, 1);
  assert.match(none.stderr, /nothing listens yet/);

  const license = testLicense();
  const beaconFixture = beaconConfig([license], { listen: "0.0.0.0:0" });
  const beacon = await startBeacon(beaconFixture, env);
  const whileBeacon = await runCli(["healthcheck"], { env });
  assert.equal(whileBeacon.code, 0, whileBeacon.stderr);

  const agent = await startAgentProcess(agentConfig(beacon.url.replace("0.0.0.0", "127.0.0.1"), { listen: "127.0.0.1:0" }), {
    ...env,
    PLATFORM_LICENSE_KEY: license.key,
  });
  assert.equal((await runCli(["healthcheck"], { env })).code, 0);
  await agent.stop();
  await beacon.stop();
  const gone = await runCli(["healthcheck"], { env });
  assert.equal(gone.code, 1, "nothing answers at the announced URL");
  assert.match(gone.stderr, /http:\/\/127\.0\.0\.1:\d+\/healthz: /);
});
