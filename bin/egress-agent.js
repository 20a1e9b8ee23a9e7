#!/usr/bin/env -S node --max-semi-space-size=4 --initial-old-space-size=36 --no-allocation-site-pretenuring
// The installed entry point: the compiled CLI when built (the image), else the TypeScript source.
// The V8 flags bound memory (bench/RESULTS.md): a 4 MiB semi-space instead of Node's default (up to 32 MiB on a large
// host), and the old generation collected when it has grown by half rather than by up to 4x (`--heap-growing-percent`,
// set as the file starts: bin/v8-flags.js; the `#!` line must stay within 127 bytes, all older Linux reads of it). Measured: RSS peaks
// under ingest, OTLP and drain load fall from 280-390 to 100-160 MiB. The young generation grows to its cap while
// starting and V8 keeps it when idle: an exposed `gc` lets the sidecar give it back with one memory-reducing collection
// a few seconds after start (src/sidecar/settle-heap.ts), so it idles at 72-73 MiB. The beacon's server starts itself
// again with 16 MiB ones (src/beacon/cli.ts).
// No allocation-site pretenuring: a request's decoded tree outlives a collection or two while it is filtered, V8 then
// allocates what those sites make straight in the old generation, and every request's garbage waits for a full
// collection. Without it the protobuf relay took 0.066-0.069 CPU s per MB against 0.095; JSON and idle RSS unchanged.
// An old generation of 36 MB before a full collection is due: V8 starts marking once the room left under that limit is
// less than three semi-spaces, and a 16 MB live heap grown by half never left that much (with the 8 MiB semi-spaces of
// before, 24 MB), so marking ran back to back: a mark-compact every 0.15-0.2 s in the OTLP relay, its helper threads a
// third of the sidecar's CPU. With 4 MiB semi-spaces and the floor, the OTLP relay takes 10-20% less CPU per MB than
// with 8 MiB and no floor, and peaks below theirs; 8 MiB with a 40 MB floor was as fast, with peaks 8-10 MiB higher
// (and 17-41 MiB higher under hostile bodies, test/bad-input/hostile-memory.test.ts).
//
// This file must parse and run on an older Node (`npx egress-agent` runs whatever `node` is first on PATH): no
// top-level await, no optional chaining, nothing imported that an old Node lacks. On an older Node it hands over to
// the project's Node 24 (.tools/node, installed by scripts/node-env.sh) when present, else says in one line what to do.
import { spawn } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import module from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import v8 from "node:v8";
import { runInNewContext } from "node:vm";
import { RUNTIME_V8_FLAGS } from "./v8-flags.js";

const NEEDED_MAJOR = 24; // package.json "engines"
const self = fileURLToPath(import.meta.url);
const root = join(self, "..", "..");

if (Number(process.versions.node.split(".")[0]) >= NEEDED_MAJOR) run();
else relaunch();

function run() {
  for (const flag of RUNTIME_V8_FLAGS) v8.setFlagsFromString(flag);
  // The collector for src/sidecar/settle-heap.ts, as `--expose-gc` would give it, without its bytes in the `#!` line.
  if (typeof globalThis.gc !== "function") {
    v8.setFlagsFromString("--expose-gc");
    globalThis.gc = runInNewContext("gc");
  }
  // V8 keeps compiled code in the OS temp dir: later starts skip most parsing (about 100 ms of ~550, bench/). Where
  // that dir is not writable (the image read-only, no tmpfs) the cache is off: enableCompileCache says so, throws nothing.
  if (module.enableCompileCache) module.enableCompileCache();
  const compiled = new URL("../dist/cli.js", import.meta.url);
  const entry = readable(compiled) ? compiled.href : new URL("../src/cli.ts", import.meta.url).href;
  // Rethrown outside the promise: the CLI fails as an uncaught error would, with its stack and exit code 1.
  import(entry).then(null, (err) =>
    setImmediate(() => {
      throw err;
    }),
  );
}

// Under Node's permission model (a deployed agent server's sandbox reads only what the install has), a path it may
// not read throws rather than answering false.
function readable(url) {
  try {
    return existsSync(url);
  } catch {
    return false;
  }
}

function relaunch() {
  const node = join(root, ".tools", "node", "node_modules", `node-${process.platform}-${process.arch}`, "bin", "node");
  // Never itself again: a .tools Node that is somehow old would hand over forever.
  if (!existsSync(node) || realpathSync(node) === realpathSync(process.execPath)) {
    const fix = existsSync(join(root, "scripts", "node-env.sh"))
      ? `install Node.js ${NEEDED_MAJOR}, or run \`source scripts/node-env.sh\` in ${root} (it installs Node ${NEEDED_MAJOR} into .tools/ and puts it on PATH)`
      : `install Node.js ${NEEDED_MAJOR} or later`;
    process.stderr.write(`egress-agent: needs Node.js ${NEEDED_MAJOR} or later, not ${process.version} (${process.execPath}): ${fix}\n`);
    process.exit(1);
  }
  // The same Node flags (the shebang's) and arguments; the exit code and a fatal signal are passed back.
  const child = spawn(node, process.execArgv.concat([self], process.argv.slice(2)), { stdio: "inherit" });
  const signals = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];
  const forward = (signal) => child.kill(signal);
  for (const signal of signals) process.on(signal, forward);
  child.on("error", (err) => {
    process.stderr.write(`egress-agent: could not start ${node}: ${err.message}\n`);
    process.exit(1);
  });
  child.on("exit", (code, signal) => {
    for (const name of signals) process.removeListener(name, forward);
    if (signal) process.kill(process.pid, signal);
    else process.exit(code === null ? 1 : code);
  });
}
