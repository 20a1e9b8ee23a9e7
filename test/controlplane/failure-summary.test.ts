import assert from "node:assert/strict";
import { test } from "node:test";
import { failureSummary } from "../../src/controlplane/failure-summary.ts";

// What a revision's status_message may say of a failed build or start: the command's own error lines only, with
// quoted excerpts, secret values and parts of them blanked.

test("only the egress-agent error lines, quoted excerpts blanked, secrets and their parts replaced, the log named", () => {
  const secrets = { OPENAI_API_KEY: "sk-live-0123456789abcdef", SHORT: "abc" };
  const output = [
    "root:x:0:0:root:/root:/bin/bash", // a graph printing a file
    "token sk-live-0123456789abcdef", // a graph printing a secret
    `egress-agent: invalid configuration in /srv/graph.json:`,
    `  graphs.agent: cannot load /srv/agent.mjs: Unexpected identifier 'hunter2'`,
    `  graphs.other: building the graph failed: no model for key 0123456789ab and "a quoted /etc/shadow line"`,
    "after the block: not ours",
  ].join("\n");
  const summary = failureSummary(output, secrets, "/data/deployments/d/build.log");
  assert.equal(
    summary,
    "egress-agent: invalid configuration in /srv/graph.json:; graphs.agent: cannot load /srv/agent.mjs: Unexpected identifier '…'; " +
      'graphs.other: building the graph failed: no model for key [secret] and "…" (the whole output is in /data/deployments/d/build.log)',
  );
  for (const leaked of ["root:x", "sk-live", "hunter2", "shadow", "0123456789ab", "not ours"]) assert.ok(!summary.includes(leaked), leaked);
  assert.equal(failureSummary("Segmentation fault\n", secrets, "/log"), "no error line (the whole output is in /log)");
});

test("a process that died before the CLI could say why: bubblewrap's line or Node's error code, never its message", () => {
  const denied = [
    "node:internal/modules/esm/resolve:275",
    "Error: Access to this API has been restricted. Use --allow-fs-read to manage permissions.",
    "    at finalizeResolution (node:internal/modules/esm/resolve:275:11) {",
    "  code: 'ERR_ACCESS_DENIED',",
    "  permission: 'FileSystemRead',",
    "  resource: '/home/ci/secret-project/cli.ts'",
    "}",
  ].join("\n");
  assert.equal(
    failureSummary(denied, {}, "/log"),
    "no error line; Node's permission model refused a FileSystemRead access (ERR_ACCESS_DENIED) (the whole output is in /log)",
  );
  assert.equal(
    failureSummary("bwrap: Can't find source path /srv/cp/deployments/d: Permission denied\n", {}, "/log"),
    "bwrap: Can't find source path /srv/cp/deployments/d: Permission denied (the whole output is in /log)",
  );
  assert.equal(
    failureSummary('TypeError [ERR_INVALID_ARG_TYPE]: The "path" argument must be hunter2\n', {}, "/log"),
    "no error line; Node failed with ERR_INVALID_ARG_TYPE (the whole output is in /log)",
  );
  // A script path the sandbox does not hold (a linked bin taken for the install, before the link was resolved).
  const missing =
    "Error: Cannot find module '/usr/local/bin/egress-agent'\n    at Module._resolveFilename {\n  code: 'MODULE_NOT_FOUND',\n  requireStack: []\n}\n";
  assert.equal(failureSummary(missing, {}, "/log"), "no error line; Node failed with MODULE_NOT_FOUND (the whole output is in /log)");
});
