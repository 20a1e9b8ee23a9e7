import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { dirname } from "node:path";
import { test } from "node:test";
import { cliNodeFlags, useCli } from "../helpers/processes.ts";

const BIN = new URL("../../bin/egress-agent.js", import.meta.url).pathname;

test("bin/egress-agent.js runs when executed, as the image's ENTRYPOINT does, with its memory-bounding Node flags", () => {
  // The flags the benchmarks (and `env -S`) read off the shebang line.
  useCli(BIN);
  assert.ok(
    cliNodeFlags().some((flag) => /^--max-semi-space-size=\d+$/.test(flag)),
    `shebang flags: ${cliNodeFlags().join(" ")}`,
  );
  // `env` finds node on PATH: put this test's Node (24) first, as the image has it.
  const run = spawnSync(BIN, ["--help"], {
    env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}` },
    encoding: "utf8",
  });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /Usage: egress-agent/);
});
