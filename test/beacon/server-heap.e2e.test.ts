import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { testLicense } from "../helpers/fixtures.ts";
import { agentConfig, beaconConfig, postJson, shebangNodeFlags, startService } from "../helpers/processes.ts";

/** The heap-sizing Node flags a running process has, read off its command line. */
const semiSpaceOf = (pid: number) =>
  readFileSync(`/proc/${pid}/cmdline`, "utf8")
    .split("\0")
    .filter((arg) => arg.startsWith("--max-semi-space-size=") || arg.startsWith("--initial-old-space-size="));

// bin/egress-agent.js starts every command with the sidecar's young generation (its shebang's flags).
const SIDECAR_FLAGS = shebangNodeFlags(new URL("../../bin/egress-agent.js", import.meta.url));
const sidecarSemiSpace = SIDECAR_FLAGS.filter(
  (flag) => flag.startsWith("--max-semi-space-size=") || flag.startsWith("--initial-old-space-size="),
);

test("the beacon's server runs with a heap of its own (young generation, old-generation floor), the same process serving; the sidecar keeps its own", async () => {
  assert.deepEqual(sidecarSemiSpace, ["--max-semi-space-size=4", "--initial-old-space-size=36"], "the entry point's flags, as read here");
  const license = testLicense();
  const fixture = beaconConfig([license]);
  const beacon = await startService(["beacon", "--config", fixture.configPath], "beacon listening", {}, [], SIDECAR_FLAGS);
  try {
    assert.deepEqual(
      semiSpaceOf(beacon.child.pid!),
      ["--max-semi-space-size=16", "--initial-old-space-size=96"],
      "started again (execve) with the server's semi-spaces and old-generation floor",
    );
    const verified = await postJson(`${beacon.url}/v1/beacon/verify`, { license: license.key });
    assert.equal(verified.status, 200, "and it serves");
    const agent = await startService(
      ["start", "--config", agentConfig(beacon.url).configPath],
      "sidecar listening",
      { PLATFORM_LICENSE_KEY: license.key },
      [],
      SIDECAR_FLAGS,
    );
    try {
      assert.deepEqual(semiSpaceOf(agent.child.pid!), sidecarSemiSpace, "the sidecar is not started again");
    } finally {
      await agent.stop();
    }
  } finally {
    await beacon.stop();
  }
});

test("an operator's own larger old-generation floor survives the beacon's restart; a smaller one gives way to the server's", async () => {
  for (const [given, kept] of [
    [128, 128],
    [48, 96],
  ] as const) {
    const fixture = beaconConfig([testLicense()]);
    const flags = [...SIDECAR_FLAGS.filter((flag) => !flag.startsWith("--initial-old-space-size=")), `--initial-old-space-size=${given}`];
    const beacon = await startService(["beacon", "--config", fixture.configPath], "beacon listening", {}, [], flags);
    try {
      assert.deepEqual(semiSpaceOf(beacon.child.pid!), ["--max-semi-space-size=16", `--initial-old-space-size=${kept}`], `given ${given}`);
    } finally {
      await beacon.stop();
    }
  }
});
