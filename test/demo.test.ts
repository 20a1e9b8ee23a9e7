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
  const filtered = stdout.slice(stdout.indexOf("after the privacy filter"));
  assert.match(filtered, /metric platform_http_requests_latency \{endpoint=\/a2a\/\{assistant_id\}, method=POST, service_name=backend\}/);
  assert.match(filtered, /log {4}Warning "slow query for <email> from <ip>" \{component=db\}/);
  assert.match(filtered, /resource \{service\.name=backend, env=[^}]+\}; not sent: host\.name/, "the host name stays home, and says so");
  assert.match(filtered, /log {4}Info: stayed home \(log records leave from Warning up: privacy\.logSeverity\)/);
  assert.ok(!/alice@example\.com|10\.1\.2\.3|node-7|u-123|logged in/.test(filtered), "nothing identifying leaves");
  const a2a = stdout.slice(stdout.indexOf("A2A client -> agent server"));
  assert.match(a2a, /"recall" +-> You told me: "buy milk", "call Ada at five"\./);
  const [, before, after] = /the beacon's total went from (\d+) to (\d+) traces/.exec(a2a) ?? [];
  assert.equal(Number(after) - Number(before), 3, "the agent server's three runs reached the beacon as billing");
});
