import assert from "node:assert/strict";
import { test } from "node:test";
import { runCli } from "./helpers/processes.ts";

test("egress-agent demo: a local beacon and sidecar deliver the sample records and the report shows them", async () => {
  const { code, stdout, stderr } = await runCli(["demo", "--transactions", "120"]);
  assert.equal(code, 0, stderr);
  assert.match(stdout, /instance -> sidecar: 120 trace transactions/);
  assert.match(stdout, /accepted 170, of which 50 were re-sent duplicates kept once/);
  assert.match(stdout, /sidecar -> beacon: 120 delivered, 0 pending, 0 failed/);
  assert.match(stdout, /license valid \(demo-license\)/);
  assert.match(stdout, /^total\s+120\s+\d+$/m);
  assert.ok(!/lic-demo-/.test(stdout), "the generated key is never printed");
});
