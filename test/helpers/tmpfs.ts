import { spawnSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, rmdirSync, writeSync } from "node:fs";
import { startService, tempDir, type AgentFixture, type ServiceProcess } from "./processes.ts";

/**
 * Test code: a small tmpfs for a process's data dir, private to that process. `unshare` gives it a user and a
 * mount namespace of its own (no privilege needed beyond unprivileged user namespaces), mounts the tmpfs over
 * the data dir there and execs the CLI: nothing to unmount afterwards, and the rest of the machine never sees
 * the mount. From outside, the tmpfs is reached through `/proc/PID/root` while the process lives.
 */
const MOUNT_AND_EXEC = 'mount -t tmpfs -o size="$1" tmpfs "$2" && shift 2 && exec "$@"';

function launcher(size: string, dir: string): string[] {
  return ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", MOUNT_AND_EXEC, "sh", size, dir];
}

/** Why a private tmpfs cannot be had on this machine, or undefined when it can. */
export function tmpfsUnavailable(): string | undefined {
  const dir = tempDir("egress-tmpfs-probe-");
  try {
    const [command, ...args] = [...launcher("1m", dir), "true"];
    const probe = spawnSync(command!, args, { encoding: "utf8" });
    if (probe.error) return `unshare cannot run: ${probe.error.message}`;
    if (probe.status !== 0) return `unshare + mount -t tmpfs failed (exit ${probe.status}): ${probe.stderr.trim()}`;
    return undefined;
  } finally {
    rmdirSync(dir);
  }
}

export interface TmpfsAgent extends ServiceProcess {
  /** The data dir as the sidecar sees it (its tmpfs), reachable from the test while the sidecar runs. */
  dataDir: string;
}

/** `egress-agent start` with its data dir on a private tmpfs of `size` (e.g. "24m"). */
export async function startAgentOnTmpfs(fixture: AgentFixture, size: string, env: NodeJS.ProcessEnv = {}): Promise<TmpfsAgent> {
  mkdirSync(fixture.dataDir, { recursive: true }); // the mount point
  const agent = await startService(["start", "--config", fixture.configPath], "sidecar listening", env, launcher(size, fixture.dataDir));
  return Object.assign(agent, { dataDir: `/proc/${agent.child.pid}/root${fixture.dataDir}` });
}

/** Writes to `file` until the file system has not one block left (as another writer on the volume would). */
export function fillUp(file: string): void {
  const fd = openSync(file, "a");
  try {
    for (const size of [2 ** 20, 4096, 512]) {
      const chunk = Buffer.alloc(size, 0x5a);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === "ENOSPC") break;
          throw err;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}
