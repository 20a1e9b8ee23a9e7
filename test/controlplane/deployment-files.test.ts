import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { closeSync, ftruncateSync, linkSync, lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { openDeploymentFile, readFrom, TAIL_BYTES } from "../../src/controlplane/deployment-files.ts";
import { tempDir } from "../helpers/processes.ts";

// The control plane's logs in a deployment's directory, which the deployment's code writes too: whatever it put
// where a log goes (a link to the control plane's key, a hard link, a FIFO, a directory), the control plane writes a
// file of its own there and touches nothing else.

function write(path: string, mode: "append" | "truncate", text: string) {
  const fd = openDeploymentFile(path, mode);
  try {
    writeFileSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

test("a symbolic link, a hard link, a FIFO or a directory where a log goes is replaced; its target is untouched", () => {
  const dir = tempDir("deployment-files-");
  const key = join(dir, "secrets.key");
  writeFileSync(key, "the control plane's key");
  const own = join(dir, "deployment");
  mkdirSync(own);

  symlinkSync(key, join(own, "build.log"));
  write(join(own, "build.log"), "truncate", "build output");
  linkSync(key, join(own, "hard.log"));
  write(join(own, "hard.log"), "truncate", "more output");
  symlinkSync(join(dir, "appended.log"), join(own, "agent-server.log")); // dangling: O_CREAT would make the target
  write(join(own, "agent-server.log"), "append", "server output");
  execFileSync("mkfifo", [join(own, "fifo.log")]);
  write(join(own, "fifo.log"), "append", "no reader blocks it");
  mkdirSync(join(own, "dir.log"));
  write(join(own, "dir.log"), "append", "not a directory");

  assert.equal(readFileSync(key, "utf8"), "the control plane's key");
  assert.equal(lstatSync(key).nlink, 1);
  assert.throws(() => lstatSync(join(dir, "appended.log")), { code: "ENOENT" });
  for (const [name, text] of [
    ["build.log", "build output"],
    ["hard.log", "more output"],
    ["agent-server.log", "server output"],
    ["fifo.log", "no reader blocks it"],
    ["dir.log", "not a directory"],
  ] as const) {
    const stat = lstatSync(join(own, name));
    assert.deepEqual([stat.isFile(), stat.mode & 0o777, readFileSync(join(own, name), "utf8")], [true, 0o600, text], name);
  }
});

test("append keeps what a log holds and reads from an offset; truncate empties it", () => {
  const path = join(tempDir("deployment-files-"), "agent-server.log");
  write(path, "append", "first run\n");
  const fd = openDeploymentFile(path, "append");
  try {
    writeFileSync(fd, "second run\n");
    assert.equal(readFrom(fd, "first run\n".length), "second run\n");
  } finally {
    closeSync(fd);
  }
  write(path, "truncate", "new");
  assert.equal(readFileSync(path, "utf8"), "new");
});

test("a log the deployment made huge (a sparse 4 GiB file) is read for its last 64 KiB only", () => {
  const path = join(tempDir("deployment-files-"), "agent-server.log");
  const fd = openDeploymentFile(path, "append");
  try {
    writeSync(fd, "before\n");
    ftruncateSync(fd, 4 * 1024 ** 3); // what a deployment's process can do to its stdout, for free
    writeSync(fd, "egress-agent: the last words\n", 4 * 1024 ** 3);
    const rssBefore = process.memoryUsage().rss;
    const tail = readFrom(fd, 0);
    assert.equal(tail.length, TAIL_BYTES);
    assert.match(tail, /egress-agent: the last words\n$/);
    assert.ok(process.memoryUsage().rss - rssBefore < 64 * 1024 ** 2, "read whole");
  } finally {
    closeSync(fd);
  }
});
