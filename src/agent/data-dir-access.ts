import { accessSync, constants, mkdirSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { DataDirError } from "../errors.ts";

/**
 * Creates the data dir if needed and checks that this process can write it, before SQLite says only "unable to open
 * database file": the refusal (exit 3) names the path, who the process runs as, who owns the directory, and the fix
 * for where this usually happens (a volume mounted without fsGroup, a host directory owned by root, a random UID).
 */
export function ensureWritableDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true });
    accessSync(dataDir, constants.W_OK | constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EACCES" && code !== "EPERM" && code !== "EROFS") throw err;
    throw new DataDirError("EGRESS_ERR_DATA_DIR_NOT_WRITABLE", notWritable(dataDir, code));
  }
}

function notWritable(dataDir: string, code: string): string {
  const who = `uid ${process.getuid?.()}, gid ${process.getgid?.()}${process.getgroups ? ` (groups ${process.getgroups().join(",")})` : ""}`;
  if (code === "EROFS") return `the data dir ${dataDir} is on a read-only filesystem; mount a writable volume there (the outbox must persist) or set dataDir elsewhere`;
  let owner = "";
  for (const path of [dataDir, dirname(dataDir)]) {
    try {
      const stat = statSync(path);
      owner = `; ${path} is owned by uid ${stat.uid}, gid ${stat.gid}, mode ${(stat.mode & 0o777).toString(8)}`;
      break;
    } catch {
      // not there yet: look at its parent
    }
  }
  return (
    `the data dir ${dataDir} is not writable by this process (${who})${owner}. ` +
    "Kubernetes: give the pod securityContext.fsGroup: 10001 (the image's group; the chart's standalone Deployment sets it, " +
    "a parent chart's pod must) so the volume is group-writable. Docker: use a named volume (it takes /data's owner) or " +
    "chown the host directory to 10001 (or to group 0 with g+rwx for a random UID). Or set dataDir to a writable directory."
  );
}
