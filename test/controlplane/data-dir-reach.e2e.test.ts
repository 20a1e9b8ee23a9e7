import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { stringify } from "yaml";
import { startService, tempDir } from "../helpers/processes.ts";

const CLI = new URL("../../src/cli.ts", import.meta.url).pathname;

// As root, a deployment's processes run as a user of their own, who must reach its directory in the control plane's
// data dir. `./data/controlplane` from a checkout's root is the default: the control plane makes `data/` traversable
// when it makes it, and refuses to start (rather than fail every build) under a directory others cannot search, such
// as a `./data` that a beacon or sidecar started from the same directory made owner-only.

const asRoot = process.getuid?.() === 0;
const KEY = "data-dir-reach-test-key-0123456789";

function config(dataDir: string): string {
  const path = join(tempDir("cp-reach-"), "controlplane.yaml");
  writeFileSync(path, stringify({ listen: "127.0.0.1:0", dataDir, apiKeys: [KEY] }));
  return path;
}

test("the parents the control plane makes for its data dir are traversable, not listable (0711)", {
  skip: !asRoot && "only root runs deployments as users of their own",
}, async () => {
  const base = tempDir("cp-reach-");
  const dataDir = join(base, "data", "controlplane");
  const controlPlane = await startService(["controlplane", "serve", "--config", config(dataDir)], "control plane listening");
  try {
    assert.equal(statSync(join(base, "data")).mode & 0o777, 0o711);
    assert.equal(statSync(dataDir).mode & 0o077, 0, "the data dir itself stays its owner's");
  } finally {
    await controlPlane.stop();
  }
});

test("a data dir under a directory others cannot search is refused at start (exit 2), naming it and the fix", {
  skip: !asRoot && "only root runs deployments as users of their own",
}, async () => {
  const ownerOnly = join(tempDir("cp-reach-"), "data");
  mkdirSync(ownerOnly, { mode: 0o700 });
  // Bounded: a control plane that starts anyway would serve until stopped.
  const run = spawnSync(process.execPath, [CLI, "controlplane", "serve", "--config", config(join(ownerOnly, "controlplane"))], {
    encoding: "utf8",
    timeout: 20_000,
  });
  assert.equal(run.status, 2, run.stderr);
  assert.match(run.stderr, new RegExp(`dataDir: .* lies under ${ownerOnly}, which others cannot search.*chmod o\\+x ${ownerOnly}`));
});
