import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { testLicense } from "../helpers/fixtures.ts";
import { beaconConfig, cliNodeFlags, useCli } from "../helpers/processes.ts";

const BIN = new URL("../../bin/egress-agent.js", import.meta.url).pathname;
const ROOT = new URL("../..", import.meta.url).pathname;

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
  // The flags the `#!` line has no room for are set by the file itself: the collector the sidecar settles its heap with
  // is there once it runs (a preload reports what the process had when it exits).
  const preload = "data:text/javascript,process.on('exit',()=>process.stderr.write('gc:'+typeof globalThis.gc))";
  const probed = spawnSync(process.execPath, [...cliNodeFlags(), "--import", preload, BIN, "--help"], { encoding: "utf8" });
  assert.equal(probed.status, 0, probed.stderr);
  assert.match(probed.stderr, /gc:function$/);
  // Linux before 5.1 (RHEL 8's 4.18, Amazon Linux 2's 4.14: a container runs on its host's kernel) reads only 127
  // bytes of the `#!` line and drops the rest: a flag cut in half would stop Node before the CLI starts.
  const shebang = readFileSync(BIN, "utf8").split("\n")[0]!;
  assert.ok(Buffer.byteLength(shebang) <= 127, `the #! line is ${Buffer.byteLength(shebang)} bytes: ${shebang}`);
});

// `npx egress-agent ...` runs whatever `node` is first on PATH: on a machine whose Node is older than 24, the entry
// point must still parse, then hand over to the project's Node 24 or say in one line what to do.
const MACHINE_NODE = "/usr/bin/node";
const machineMajor = () => {
  const run = spawnSync(MACHINE_NODE, ["-p", "process.versions.node.split('.')[0]"], { encoding: "utf8" });
  return run.status === 0 ? Number(run.stdout.trim()) : undefined;
};
const olderNode = machineMajor();
const skipOlder = olderNode === undefined || olderNode >= 24 ? `the machine's ${MACHINE_NODE} is not older than Node 24` : false;
const pathWithMachineNodeFirst = () => `/usr/bin:${process.env.PATH}`;

test("on the machine's older Node, bin/egress-agent.js runs the CLI with the project's Node 24 (.tools/node)", { skip: skipOlder }, () => {
  const tools = join(ROOT, ".tools/node/node_modules", `node-${process.platform}-${process.arch}`, "bin/node");
  assert.ok(existsSync(tools), `${tools}: scripts/node-env.sh installs it when the machine's node is older`);
  for (const run of [
    spawnSync(MACHINE_NODE, [BIN, "--help"], { encoding: "utf8" }),
    // As `npx egress-agent` and `npm link` run it: executed, `env` finding the machine's node first on PATH.
    spawnSync(BIN, ["--help"], { env: { ...process.env, PATH: pathWithMachineNodeFirst() }, encoding: "utf8" }),
  ]) {
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /Usage: egress-agent/);
  }
  // The CLI's own exit codes come back through the hand-over: a bad config is still exit 2.
  const bad = spawnSync(MACHINE_NODE, [BIN, "validate", "--config", join(ROOT, "no-such-config.yaml")], { encoding: "utf8" });
  assert.equal(bad.status, 2, bad.stderr);
  assert.match(bad.stderr, /^egress-agent: invalid configuration/);
});

test("on an older Node without .tools/node, bin/egress-agent.js says in one line what to do and exits 1", { skip: skipOlder }, () => {
  // An install of its own (bin/ and package.json beside it), first a checkout's (scripts/node-env.sh), then a bare one.
  const install = mkdtempSync(join(tmpdir(), "bin-old-node-"));
  try {
    mkdirSync(join(install, "bin"));
    for (const file of readdirSync(dirname(BIN))) copyFileSync(join(dirname(BIN), file), join(install, "bin", file));
    writeFileSync(join(install, "package.json"), JSON.stringify({ type: "module" }));
    mkdirSync(join(install, "scripts"));
    writeFileSync(join(install, "scripts/node-env.sh"), "");
    const checkout = spawnSync(MACHINE_NODE, [join(install, "bin/egress-agent.js"), "--help"], { encoding: "utf8" });
    assert.equal(checkout.status, 1);
    assert.equal(checkout.stdout, "");
    assert.match(
      checkout.stderr,
      /^egress-agent: needs Node\.js 24 or later, not v\d+\.\d+\.\d+ \(\/usr\/bin\/node\): install Node\.js 24, or run `source scripts\/node-env\.sh` in .*\n$/,
    );
    rmSync(join(install, "scripts"), { recursive: true });
    const bare = spawnSync(MACHINE_NODE, [join(install, "bin/egress-agent.js"), "start"], { encoding: "utf8" });
    assert.equal(bare.status, 1);
    assert.equal(
      bare.stderr,
      `egress-agent: needs Node.js 24 or later, not v${spawnSync(MACHINE_NODE, ["-p", "process.versions.node"], { encoding: "utf8" }).stdout.trim()} (/usr/bin/node): install Node.js 24 or later\n`,
    );
  } finally {
    rmSync(install, { recursive: true, force: true });
  }
});

test("on an older Node, a SIGTERM to the entry point (as a supervisor sends its main pid) stops the service it handed over to, exit 0", {
  skip: skipOlder,
}, async () => {
  const fixture = beaconConfig([testLicense()]);
  const child = spawn(MACHINE_NODE, [BIN, "beacon", "--config", fixture.configPath], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (chunk) => {
      output += chunk;
      const url = /"url":"(http:\/\/127\.0\.0\.1:\d+)".*"msg":"beacon listening"/.exec(output)?.[1];
      if (url) resolve(url);
    });
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("exit", (code) => reject(new Error(`exited ${code} before listening:\n${output}`)));
  });
  const url = await listening;
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  child.kill("SIGTERM");
  assert.equal(await exited, 0, output);
  // Node 24's process, the one serving, is gone with it.
  await assert.rejects(fetch(`${url}/healthz`));
});
