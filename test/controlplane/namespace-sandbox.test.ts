import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { bwrapArgs } from "../../src/controlplane/namespace-sandbox.ts";
import { tempDir } from "../helpers/processes.ts";

// What a deployment's process sees in its namespaces (isolation namespace): only what bwrapArgs lists. Run for real
// with bubblewrap (CI installs it; without it this fails, naming bwrap).

function inside(script: string, options: { readable: string[]; writable?: string }): string {
  const args = bwrapArgs({ cwd: "/", dieWithParent: true, ...options });
  return execFileSync("bwrap", [...args, "/bin/sh", "-c", script], { encoding: "utf8", timeout: 20_000 });
}

test("the namespace holds the system, a few files of /etc, what it reads and its own directory: no host key, nothing beside", () => {
  const root = tempDir("namespace-sandbox-");
  const [graph, own, beside] = ["graph", "own", "beside"].map((name) => join(root, name)) as [string, string, string];
  for (const dir of [graph, own, beside]) mkdirSync(dir);
  writeFileSync(join(beside, "secrets.key"), "not for the deployment");
  const readable = [graph, process.execPath];

  const etc = ["resolv.conf", "hosts", "host.conf", "gai.conf", "nsswitch.conf", "passwd", "group", "localtime"];
  const expected = [...etc.filter((name) => existsSync(`/etc/${name}`)), "ssl", ...(existsSync("/etc/pki") ? ["pki"] : [])];
  assert.deepEqual(inside("ls -A /etc", { readable }).trim().split("\n").sort(), expected.sort());
  assert.deepEqual(
    inside("ls -A /etc/ssl", { readable }).trim().split("\n"),
    existsSync("/etc/ssl/openssl.cnf") ? ["certs", "openssl.cnf"] : ["certs"],
  );
  // The host's TLS keys, its shadow file and a file beside the deployment's directories do not exist in there.
  const absent = ["/etc/ssl/private", "/etc/shadow", join(beside, "secrets.key"), beside];
  const probes = absent.map((path) => `test -e '${path}' && echo '${path}'`);
  assert.equal(inside([...probes, "true"].join("; "), { readable }), "");

  // Its own directory is writable, what it reads is not; it is pid 1, nobody, with no capabilities.
  const script = `echo ok > ${own}/mine; (echo x > ${graph}/planted) 2>/dev/null || echo refused; grep -E '^(Uid|CapEff)' /proc/self/status; echo pid $$`;
  assert.match(inside(script, { readable, writable: own }), /^refused\nUid:\s+65534\s+65534\s+65534\s+65534\nCapEff:\s+0+\npid 1\n$/);
  assert.equal(readFileSync(join(own, "mine"), "utf8"), "ok\n");
});

test("the kernel's global settings stay out of reach: /proc read-only (/proc/sys, sysrq), no nested user namespace", () => {
  const script = [
    "(echo 61 > /proc/sys/vm/swappiness) 2>/dev/null && echo wrote-sysctl",
    "(echo x > /proc/sysrq-trigger) 2>/dev/null && echo wrote-sysrq",
    "unshare -U -r true 2>/dev/null && echo nested-userns",
    "echo done",
  ].join("; ");
  const before = readFileSync("/proc/sys/vm/swappiness", "utf8");
  assert.equal(inside(script, { readable: [] }), "done\n");
  assert.equal(readFileSync("/proc/sys/vm/swappiness", "utf8"), before);
});
