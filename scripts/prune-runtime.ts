// The image's runtime install (Dockerfile, stage `deps`): better-sqlite3, pg and LangGraph with their dependencies,
// the packages the bundle leaves out. npm installs about 80 MB of them, half of which never runs: the other
// platforms' prebuilt SQLite binaries, SQLite's C sources, TypeScript sources and declarations, source maps, READMEs,
// and js-tiktoken's every-encoding build. This removes those files and then loads every dependency, so a rule that
// removed something that runs fails the image build rather than a container.
//   node scripts/prune-runtime.ts /app          (the directory holding package.json and node_modules/)
import { spawnSync } from "node:child_process";
import { lstatSync, readdirSync, rmdirSync, rmSync } from "node:fs";
import { join, relative, sep } from "node:path";

/** Kinds of file Node loads at run time. Anything else in a package is never read by a running process. */
const RUNS = /\.(?:js|cjs|mjs|json|node)$/;
/** Licence texts ship with the code they cover. */
const LEGAL = /^(?:licen[cs]e|notice|copying|authors)(?:[.-]|$)/i;

/** Paths under node_modules/ that are code nothing loads, with the reason. */
export const UNUSED: Record<string, string> = {
  "better-sqlite3/deps": "SQLite's amalgamation and its build scripts: only a source build reads them",
  ".bin": "links to packages' command-line tools: nothing in the image runs them",
  // @langchain/core imports js-tiktoken/lite and fetches an encoding's ranks over the network when one is asked for;
  // the package's main build embeds every encoding (5.6 MB, twice: ESM and CommonJS) and ranks/ holds them again.
  "js-tiktoken/dist/index.js": "the every-encoding build: @langchain/core imports js-tiktoken/lite",
  "js-tiktoken/dist/index.cjs": "the every-encoding build, CommonJS",
  "js-tiktoken/dist/ranks": "the encodings as modules: @langchain/core fetches the one it needs",
};

/** The name prebuilt addons carry for this process's platform: linux-x64, linuxmusl-arm64, darwin-arm64... */
export function prebuildTarget(): string {
  const musl =
    process.platform === "linux" &&
    !(process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime;
  return `${musl ? "linuxmusl" : process.platform}-${process.arch}`;
}

/** Why `path` (relative to node_modules/, `/`-separated) never runs here, or undefined when it is kept. */
export function reasonToRemove(path: string, target = prebuildTarget()): string | undefined {
  for (const [prefix, reason] of Object.entries(UNUSED)) {
    if (path === prefix || path.startsWith(`${prefix}/`)) return reason;
  }
  const name = path.slice(path.lastIndexOf("/") + 1);
  if (LEGAL.test(name)) return undefined;
  if (/\.d\.[cm]?ts$/.test(name)) return "a TypeScript declaration";
  if (!RUNS.test(name)) return "not a kind of file Node loads (sources, maps, docs, build files)";
  // prebuilds/<platform>-<arch>.node (better-sqlite3) or prebuilds/<platform>-<arch>/*.node (prebuildify)
  const prebuilt = /(?:^|\/)prebuilds\/([^/]+)/.exec(path);
  if (prebuilt && name.endsWith(".node") && prebuilt[1] !== target && prebuilt[1] !== `${target}.node`) {
    return `a prebuilt addon for ${prebuilt[1]!.replace(/\.node$/, "")}, not ${target}`;
  }
  return undefined;
}

export interface PruneResult {
  removedFiles: number;
  removedBytes: number;
  keptBytes: number;
}

/** Removes from `nodeModules` every file reasonToRemove names, and the directories left empty. */
export function pruneNodeModules(nodeModules: string, target = prebuildTarget()): PruneResult {
  const result: PruneResult = { removedFiles: 0, removedBytes: 0, keptBytes: 0 };
  const walk = (dir: string): boolean => {
    let empty = true;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      const rel = relative(nodeModules, path).split(sep).join("/");
      if (entry.isDirectory()) {
        if (UNUSED[rel] !== undefined) {
          const { files, bytes } = sizeOf(path);
          result.removedFiles += files;
          result.removedBytes += bytes;
          rmSync(path, { recursive: true });
        } else if (walk(path)) rmdirSync(path);
        else empty = false;
        continue;
      }
      const size = lstatSync(path).size;
      if (reasonToRemove(rel, target) === undefined) {
        result.keptBytes += size;
        empty = false;
      } else {
        result.removedBytes += size;
        result.removedFiles += 1;
        rmSync(path);
      }
    }
    return empty;
  };
  walk(nodeModules);
  return result;
}

/** The files under `dir` and their bytes (links as links: not what they point to). */
function sizeOf(dir: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const inner = sizeOf(path);
      files += inner.files;
      bytes += inner.bytes;
    } else {
      files += 1;
      bytes += lstatSync(path).size;
    }
  }
  return { files, bytes };
}

/**
 * Loads, from `appDir`, every dependency its package.json names, opens an SQLite database with the addon kept and
 * imports what loads js-tiktoken/lite: throws with Node's own message when something that runs was removed.
 */
export function verifyRuntime(appDir: string): void {
  const check = `
    import { readFileSync } from "node:fs";
    const { dependencies } = JSON.parse(readFileSync("package.json", "utf8"));
    for (const name of Object.keys(dependencies)) await import(name);
    const { default: Database } = await import("better-sqlite3");
    new Database(":memory:").close();
    await import("@langchain/core/utils/tiktoken");`;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", check], { cwd: appDir, encoding: "utf8" });
  if (run.status !== 0) throw new Error(`the pruned runtime install does not load: ${run.stderr.trim()}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const appDir = process.argv[2] ?? ".";
  const { removedFiles, removedBytes, keptBytes } = pruneNodeModules(join(appDir, "node_modules"));
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  verifyRuntime(appDir);
  process.stdout.write(
    `prune-runtime: removed ${removedFiles} files (${mb(removedBytes)} MB); node_modules keeps ${mb(keptBytes)} MB, and loads\n`,
  );
}
