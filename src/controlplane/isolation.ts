import { execFileSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, isAbsolute, join } from "node:path";
import type { Logger } from "pino";
import { ConfigError } from "../errors.ts";
import type { ControlPlaneConfig } from "./config.ts";
import { bwrapArgs } from "./namespace-sandbox.ts";

/**
 * What keeps a deployment's code (the local deployer's build check and agent server) out of the control plane's
 * files and out of the other deployments': an operating-system boundary, with Node's permission model inside it as
 * one more layer (src/controlplane/process-sandbox.ts).
 * - user: each deployment's processes run as a user of their own (agentServer.runAsUidBase; the control plane runs
 *   as root), and the control plane's files are root's, owner-only.
 * - namespace: each runs in namespaces of its own through bubblewrap, where those files do not exist.
 * - none: only Node's permission model, which native code (an addon, an SQLite extension) walks through. Only for
 *   code you wrote.
 */
export type Isolation =
  | { mode: "user"; uidBase: number }
  /** `uidBase`: as root, bwrap itself runs as the deployment's user (see resolveIsolation). */
  | { mode: "namespace"; bwrap: string; uidBase?: number | undefined }
  | { mode: "none" };

/**
 * The first user id of deployments in namespaces when the control plane runs as root and sets no runAsUidBase: a
 * range far above the ids distributions hand out (and above the usual subordinate-id ranges' start).
 */
export const DEFAULT_NAMESPACE_UID_BASE = 1_500_000_000;

/** What `agentServer.isolation` asks for (src/controlplane/config.ts). */
export type IsolationSetting = ControlPlaneConfig["agentServer"]["isolation"];

const FIX =
  "install bubblewrap (Debian: apt-get install bubblewrap) and allow user namespaces, or run the control plane as root " +
  "with agentServer.runAsUidBase; only for code you wrote, agentServer.isolation: none";

/**
 * The isolation the configuration asks for, checked now: `auto` is a user per deployment when runAsUidBase is set,
 * else namespaces when bubblewrap works here; nothing else is accepted silently. `bwrap`: the binary (default: on
 * PATH); `node`: the runtime the deployments run on (the probe runs it inside).
 */
export function resolveIsolation(
  setting: { isolation: IsolationSetting; runAsUidBase?: number | undefined },
  options: { logger: Logger; bwrap?: string | undefined; node?: string | undefined },
): Isolation {
  const { isolation, runAsUidBase } = setting;
  if (runAsUidBase !== undefined && (isolation === "auto" || isolation === "user")) {
    if (process.getuid?.() !== 0) {
      throw new ConfigError("agentServer.runAsUidBase", [
        "agentServer.runAsUidBase: the control plane must run as root to start agent servers as other users",
      ]);
    }
    return { mode: "user", uidBase: runAsUidBase };
  }
  if (isolation === "user") {
    throw new ConfigError("agentServer.isolation", ["agentServer.isolation: user needs agentServer.runAsUidBase (and root)"]);
  }
  if (isolation === "none") {
    options.logger.warn(
      { isolation: "none" },
      "UNISOLATED: agentServer.isolation is none, so deployed code runs as the control plane's user with only Node's permission model around it; native code in a graph can read secrets.key and every deployment's secrets. Only for code you wrote.",
    );
    return { mode: "none" };
  }
  // As root, the namespace's user would be the host's root to the kernel's owner checks (its /proc/sys, an abstract
  // socket's peer, any file bound in): bwrap runs as an unprivileged user of the deployment's own instead.
  const uidBase = process.getuid?.() === 0 ? (runAsUidBase ?? DEFAULT_NAMESPACE_UID_BASE) : undefined;
  const bwrap = options.bwrap ?? onPath("bwrap");
  const failure = bwrap ? probeNamespace(bwrap, options.node ?? process.execPath, uidBase) : "bwrap is not on PATH";
  if (failure === undefined) return { mode: "namespace", bwrap: bwrap!, uidBase };
  throw new ConfigError("agentServer.isolation", [
    `agentServer.isolation: ${isolation === "auto" ? "no isolation is available for deployed code" : "namespace is not available"} (${failure}): ${FIX}`,
  ]);
}

/**
 * Whether bubblewrap can start a process here as the local deployer will (as `uid`, when given): undefined when Node
 * runs inside it with no capabilities at all, else what went wrong (e.g. the Node binary out of that user's reach).
 */
export function probeNamespace(bwrap: string, node: string, uid?: number): string | undefined {
  const script = "process.stdout.write(/^CapEff:\\s*(\\S+)/m.exec(require('fs').readFileSync('/proc/self/status','utf8'))[1])";
  try {
    const args = bwrapArgs({ readable: [node], cwd: "/", dieWithParent: true });
    const user = uid === undefined ? {} : { uid, gid: uid };
    const capEff = execFileSync(bwrap, [...args, node, "-e", script], { timeout: 10_000, stdio: ["ignore", "pipe", "pipe"], ...user });
    return /^0+$/.test(capEff.toString()) ? undefined : `the process kept capabilities (CapEff ${capEff})`;
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    return `${bwrap} failed: ${stderr || (err as Error).message}`;
  }
}

function onPath(name: string, path = process.env.PATH ?? ""): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not here
    }
  }
  return undefined;
}
