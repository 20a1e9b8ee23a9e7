import { existsSync, lstatSync, readlinkSync, realpathSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import type { Readable, Writable } from "node:stream";

/**
 * A deployment's process in Linux namespaces of its own, through bubblewrap (`bwrap`): a mount namespace that holds
 * only what the process must see (the system's /usr, a few files of /etc, the Node binary and what the sandbox
 * lists, read-only; its own directory read-write; a private /tmp), so the control plane's data dir, secrets.key,
 * controlplane.db and the other deployments' directories do not exist in it; its own pid, ipc, uts and cgroup
 * namespaces; and a user namespace whose only user is an unprivileged one (no capabilities, CapEff 0), so native
 * code cannot mount, trace or undo any of it. The network namespace stays the host's: the control plane reaches the
 * agent server on a loopback port, and graphs call APIs.
 */

/** The unprivileged user (nobody) a deployment's process is inside its user namespace. */
export const SANDBOX_UID = 65534;

/** The system directories a process needs to run at all: read-only (merged-/usr systems have symlinks here). */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/**
 * Of /etc, only what name resolution, TLS and user lookups read: none of it holds a secret. Never a whole /etc/ssl or
 * /etc/pki: their private/ is the host's keys, root's, and the process is the control plane's user to the kernel's
 * owner check (its user namespace maps nobody to that user), so only what is not there is safe.
 */
const ETC_FILES = [
  "/etc/resolv.conf",
  "/etc/hosts",
  "/etc/host.conf",
  "/etc/gai.conf",
  "/etc/nsswitch.conf",
  "/etc/passwd",
  "/etc/group",
  "/etc/localtime",
  "/etc/ssl/certs",
  "/etc/ssl/openssl.cnf",
  "/etc/pki/tls/certs",
  "/etc/pki/ca-trust/extracted",
];

export interface NamespaceOptions {
  /** Directories (or files) the process reads: each is bound read-only, at its path and at the path it resolves to. */
  readable: string[];
  /** The one directory it writes. */
  writable?: string | undefined;
  /** Its working directory (inside what it reads). */
  cwd: string;
  /**
   * Ends with the control plane (a build check). Never for an agent server: it outlives a control plane restart,
   * which adopts it again.
   */
  dieWithParent: boolean;
  /** A descriptor on which bwrap writes `{"child-pid": N}`: N is the process's pid as the control plane sees it. */
  infoFd?: number | undefined;
}

/** bwrap's arguments up to and including `--`; the command follows. */
export function bwrapArgs(options: NamespaceOptions): string[] {
  const args = [
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup",
    "--uid",
    String(SANDBOX_UID),
    "--gid",
    String(SANDBOX_UID),
    "--cap-drop",
    "ALL",
    // No namespaces of its own inside: a nested user namespace would hand it every capability there again (kernel
    // attack surface, a network namespace of its own).
    "--disable-userns",
    // A session of its own: no terminal to push input into, and its pid leads its process group (signalled as one).
    "--new-session",
    // The command is the namespace's pid 1: its pid is the one the control plane records, checks and signals, and
    // when it ends, the kernel ends everything it started.
    "--as-pid-1",
    "--proc",
    "/proc",
    // Read-only: /proc/sys and /proc/sysrq-trigger are the kernel's global settings.
    "--remount-ro",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
  ];
  for (const dir of SYSTEM_DIRS) args.push(...systemEntry(dir));
  for (const file of ETC_FILES) args.push("--ro-bind-try", file, file);
  // Each path is bound where it resolves to; a path through a symbolic link is bound at that path too, unless a
  // directory bound above it already holds the link (bwrap could not make the path inside a read-only bind).
  const binds = new Map<string, string>();
  const aliases = new Map<string, string>();
  const add = (path: string, kind: string) => {
    const absolute = resolve(path);
    if (!existsSync(absolute)) return;
    const real = realpathSync(absolute);
    binds.set(real, kind);
    if (real !== absolute) aliases.set(absolute, kind);
  };
  for (const path of options.readable) add(path, "--ro-bind");
  if (options.writable) add(options.writable, "--bind");
  for (const [alias, kind] of aliases) if (![...binds.keys()].some((dir) => within(alias, dir))) binds.set(alias, kind);
  // Parents before children: a later bind over a path hides an earlier one beneath it.
  for (const [path, kind] of [...binds].sort(([a], [b]) => depth(a) - depth(b))) args.push(kind, path, path);
  args.push("--chdir", options.cwd);
  if (options.dieWithParent) args.push("--die-with-parent");
  if (options.infoFd !== undefined) args.push("--info-fd", String(options.infoFd));
  args.push("--");
  return args;
}

/**
 * The pid bwrap tells on its info descriptor (it closes it once told): the sandboxed process as the control plane
 * sees it. Undefined when bwrap ended without starting it.
 */
export async function sandboxedPid(info: Readable | Writable | null | undefined): Promise<number | undefined> {
  if (!info || !("read" in info)) return undefined;
  let text = "";
  for await (const chunk of info) text += chunk;
  try {
    const pid = (JSON.parse(text) as { "child-pid"?: unknown })["child-pid"];
    return typeof pid === "number" && Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** A system directory as the host has it: a symlink stays a symlink, a directory is bound read-only, absence is fine. */
function systemEntry(dir: string): string[] {
  const stat = lstatSync(dir, { throwIfNoEntry: false });
  if (!stat) return [];
  if (stat.isSymbolicLink()) return ["--symlink", readlinkSync(dir), dir];
  return ["--ro-bind", dir, dir];
}

const within = (path: string, dir: string) => path !== dir && path.startsWith(dir === "/" ? "/" : `${dir}/`);

const depth = (path: string) => (isAbsolute(path) ? join(path, ".").split("/").length : 0);
