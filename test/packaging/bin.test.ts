import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { test } from "node:test";

const BIN = new URL("../../bin/egress-agent.js", import.meta.url).pathname;

test("bin/egress-agent.js runs when executed, as the image's ENTRYPOINT does, with its memory-bounding Node flags", () => {
  const shebang = readFileSync(BIN, "utf8").split("\n", 1)[0]!;
  assert.match(shebang, /^#!\/usr\/bin\/env -S node .*--max-semi-space-size=\d+/);
  // `env` finds node on PATH: put this test's Node (24) first, as the image has it.
  const run = spawnSync(BIN, ["--help"], { env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}` }, encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /Usage: egress-agent/);
});
