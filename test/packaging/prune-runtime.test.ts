import assert from "node:assert/strict";
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { prebuildTarget, pruneNodeModules, reasonToRemove } from "../../scripts/prune-runtime.ts";
import { tempDir } from "../helpers/processes.ts";

// The image's runtime install is pruned by scripts/prune-runtime.ts (Dockerfile, stage deps); the image test loads
// the real result. Here: which files go and which stay, on a tree with each kind of file the real one holds.

const FILES: Record<string, "kept" | "removed"> = {
  "pkg/package.json": "kept",
  "pkg/index.js": "kept",
  "pkg/index.cjs": "kept",
  "pkg/esm/index.mjs": "kept",
  "pkg/LICENSE": "kept",
  "pkg/LICENSE-MIT.txt": "kept",
  "pkg/NOTICE.md": "kept",
  "pkg/index.d.ts": "removed",
  "pkg/index.d.cts": "removed",
  "pkg/esm/index.d.mts": "removed",
  "pkg/index.js.map": "removed",
  "pkg/README.md": "removed",
  "pkg/CHANGELOG.md": "removed",
  "pkg/src/index.ts": "removed",
  "pkg/bin/tool": "removed",
  "@scope/pkg/package.json": "kept",
  "@scope/pkg/dist/index.js": "kept",
  "@scope/pkg/dist/index.d.ts": "removed",
  "better-sqlite3/package.json": "kept",
  "better-sqlite3/lib/index.js": "kept",
  "better-sqlite3/prebuilds/linux-x64.node": "kept",
  "better-sqlite3/prebuilds/linuxmusl-x64.node": "removed",
  "better-sqlite3/prebuilds/linux-arm64.node": "removed",
  "better-sqlite3/prebuilds/darwin-arm64.node": "removed",
  "better-sqlite3/prebuilds/win32-x64.node": "removed",
  "better-sqlite3/deps/copy.js": "removed",
  "better-sqlite3/deps/sqlite3/sqlite3.c": "removed",
  "better-sqlite3/src/better_sqlite3.cpp": "removed",
  "better-sqlite3/binding.gyp": "removed",
  "addon/prebuilds/linux-x64/node.napi.node": "kept",
  "addon/prebuilds/darwin-x64/node.napi.node": "removed",
  "addon/build/Release/addon.node": "kept",
  "js-tiktoken/package.json": "kept",
  "js-tiktoken/dist/lite.js": "kept",
  "js-tiktoken/dist/lite.cjs": "kept",
  "js-tiktoken/dist/chunk-VL2OQCWN.js": "kept",
  "js-tiktoken/dist/index.js": "removed",
  "js-tiktoken/dist/index.cjs": "removed",
  "js-tiktoken/dist/ranks/o200k_base.js": "removed",
};

test("pruning keeps the code Node loads, the licences and this platform's addon; it removes the rest and the directories left empty", () => {
  const root = join(tempDir(), "node_modules");
  for (const path of Object.keys(FILES)) {
    mkdirSync(join(root, dirname(path)), { recursive: true });
    writeFileSync(join(root, path), "x".repeat(100));
  }
  mkdirSync(join(root, ".bin"));
  symlinkSync("../pkg/bin/tool", join(root, ".bin/tool"));
  const result = pruneNodeModules(root, "linux-x64");
  const kept = Object.entries(FILES)
    .filter(([, fate]) => fate === "kept")
    .map(([path]) => path);
  const left = readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => !entry.isDirectory())
    .map((entry) => join(entry.parentPath, entry.name).slice(root.length + 1));
  assert.deepEqual(left.sort(), kept.sort());
  // Every removed file counted, those of the directories that go whole too, and the link as a link.
  const removed = Object.keys(FILES).length - kept.length;
  assert.equal(result.keptBytes, kept.length * 100);
  assert.equal(result.removedFiles, removed + 1);
  assert.equal(result.removedBytes, removed * 100 + "../pkg/bin/tool".length);
  for (const gone of ["pkg/src", "pkg/bin", "better-sqlite3/src", "better-sqlite3/deps", "js-tiktoken/dist/ranks", ".bin"]) {
    assert.ok(!readdirSync(join(root, dirname(gone))).includes(gone.split("/").at(-1)!), `${gone} removed`);
  }
});

test("each removal has a reason that names what the file is; musl and glibc binaries are told apart", () => {
  assert.match(
    reasonToRemove("better-sqlite3/prebuilds/linuxmusl-x64.node", "linux-x64")!,
    /prebuilt addon for linuxmusl-x64, not linux-x64/,
  );
  assert.equal(reasonToRemove("better-sqlite3/prebuilds/linuxmusl-x64.node", "linuxmusl-x64"), undefined);
  assert.match(reasonToRemove("zod/v4/index.d.cts")!, /TypeScript declaration/);
  assert.match(reasonToRemove("js-tiktoken/dist/index.js")!, /js-tiktoken\/lite/);
  assert.match(reasonToRemove("better-sqlite3/deps/sqlite3/sqlite3.c")!, /only a source build/);
  assert.equal(reasonToRemove("zod/v4/index.js"), undefined);
  // This machine's name for itself, as better-sqlite3 computes it (glibc here, as in the image).
  assert.equal(prebuildTarget(), `${process.platform}-${process.arch}`);
});
