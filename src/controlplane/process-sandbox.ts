import { existsSync, lstatSync, readdirSync, realpathSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { DeployerError } from "./deployer.ts";

/**
 * What a deployment's processes (the build check and the agent server) may touch: they read what the CLI needs of the
 * egress-agent install, the graph's directory and the node_modules above it, and their own deployment directory, and write only
 * the latter; they start no child processes and no workers. So a graph cannot read the control plane's data dir:
 * `secrets.key`, `controlplane.db`, another deployment's data.
 *
 * Node's permission model (`flags`) enforces it inside the process, but it is no boundary against code that sets out
 * to escape it: `--allow-addons` must stay on for better-sqlite3, and a native addon (or an SQLite extension loaded
 * through it) acts outside the model. The boundary is the OS's (src/controlplane/isolation.ts): a user of its own,
 * or a namespace that holds only `readable` and `writable` (src/controlplane/namespace-sandbox.ts).
 */
export interface Sandbox {
  /** Node flags, before the script. */
  flags: string[];
  /** Directories the processes read (absolute). */
  readable: string[];
  /** The one directory they write: the deployment's own. */
  writable: string;
}

/** What the CLI runs from in an install: without one of these, the deployment's processes could not start. */
const CLI_PARTS = new Set(["package.json", "bin", "dist", "src", "node_modules"]);

/**
 * The egress-agent install the CLI runs from (the nearest directory at or above `from` holding a package.json), as
 * directories and files the deployment reads: the whole install, but for the top-level entry that holds the control
 * plane's data dir when it lies inside (`data/` of `./data/controlplane`, the default, from a checkout's root). A data
 * dir inside a part the CLI runs from cannot be left out: the install is then returned whole, and refused.
 */
function installReadable(from: string, dataDir: string): string[] {
  let root = resolve(from);
  while (!existsSync(join(root, "package.json")) && dirname(root) !== root) root = dirname(root);
  if (!existsSync(join(root, "package.json"))) return [resolve(from)];
  const rootReal = real(root);
  const rel = relative(rootReal, real(dataDir));
  if (rel === "" || !inside(real(dataDir), rootReal)) return [rootReal];
  const top = rel.split(sep)[0]!;
  if (CLI_PARTS.has(top)) return [rootReal];
  return readdirSync(rootReal)
    .filter((entry) => entry !== top)
    .map((entry) => join(rootReal, entry));
}

/**
 * Every `node_modules` directory at or above `dir`: where Node resolves the graph's packages from. Each must be a
 * directory, not a link: the graph's tree is its author's, and a `node_modules -> /etc` would be bound (and allowed)
 * where it points. A DeployerError names the link.
 */
function nodeModulesAbove(dir: string): string[] {
  const found: string[] = [];
  for (let at = resolve(dir); ; at = dirname(at)) {
    const entry = lstatSync(join(at, "node_modules"), { throwIfNoEntry: false });
    if (entry && !entry.isDirectory()) {
      throw new DeployerError(`${join(at, "node_modules")} is not a directory (a link?): the deployment would read where it points`);
    }
    if (entry) found.push(join(at, "node_modules"));
    if (dirname(at) === at) return found;
  }
}

const real = (path: string) => (existsSync(path) ? realpathSync(path) : path);

const inside = (path: string, dir: string) => {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !rel.startsWith(sep));
};

/**
 * The sandbox of one deployment. Refused (a DeployerError: the revision fails, naming why) when a directory the
 * deployment must read holds the control plane's data dir (whole trees are allowed, so it could not be kept out), or
 * lies inside it (a graph.json in another deployment's directory would make that directory readable).
 */
export function sandboxFor(options: { script: string; graphConfig: string; deploymentDir: string; controlPlaneDataDir: string }): Sandbox {
  const readable = [
    ...installReadable(dirname(real(options.script)), options.controlPlaneDataDir),
    dirname(resolve(options.graphConfig)),
    ...nodeModulesAbove(dirname(options.graphConfig)),
  ];
  const dataDir = resolve(options.controlPlaneDataDir);
  for (const dir of readable) {
    // Through symbolic links too: a namespace binds what a path resolves to.
    if (inside(dataDir, dir) || inside(real(dataDir), real(dir))) {
      throw new DeployerError(
        `${dir} holds the control plane's data dir ${dataDir}, and the deployment must read it: keep graphs (and the egress-agent install) outside the data dir's tree`,
      );
    }
    if (inside(dir, dataDir) || inside(real(dir), real(dataDir))) {
      throw new DeployerError(`${dir} is inside the control plane's data dir ${dataDir}: keep graphs outside it`);
    }
  }
  const own = resolve(options.deploymentDir);
  return {
    readable: [...new Set(readable)],
    writable: own,
    flags: [
      "--permission",
      ...[...new Set(readable), own].map((dir) => `--allow-fs-read=${dir}`),
      `--allow-fs-write=${own}`,
      "--allow-addons",
      "--disable-warning=SecurityWarning",
    ],
  };
}

/**
 * Of the control plane's own Node flags, those its deployments' processes share: memory sizing (the CLI's shebang sets
 * them) and nothing else. An allowlist, because the others hand the control plane's own to deployed code:
 * `--env-file` its environment (an API key), `--import`/`--require` its preloads, `--inspect` a debugger port.
 */
function inheritedNodeFlags(execArgv: readonly string[]): string[] {
  return execArgv.filter((flag) =>
    /^--(max-semi-space-size|max-old-space-size|initial-old-space-size|heap-growing-percent)=\d+$/.test(flag),
  );
}

/**
 * How to run egress-agent as this process was run: this Node, its memory flags and the script's real path. Run through
 * a link (`npm link`, the image's /usr/local/bin/egress-agent), argv[1] is the link: the install the deployment may
 * read is found from the script's directory, and the link does not exist in its namespace.
 */
export function thisCli(): { node: string; args: string[] } {
  return { node: process.execPath, args: [...inheritedNodeFlags(process.execArgv), realpathSync(process.argv[1]!)] };
}
