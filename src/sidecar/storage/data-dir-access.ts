import { accessSync, chmodSync, constants, mkdirSync, readdirSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { DataDirError } from "../../errors.ts";
import { groupShared } from "../../file-modes.ts";

/**
 * Creates the data dir if needed and checks that this process can write it, before SQLite says only "unable to open
 * database file": the refusal (exit 3) names the path, who the process runs as, who owns the directory, and the fix
 * for where this usually happens (a volume mounted without fsGroup, a host directory owned by root, a random UID).
 */
export function ensureWritableDataDir(configured: string): void {
  const dataDir = resolve(configured);
  try {
    mkdirSync(dataDir, { recursive: true });
    accessSync(dataDir, constants.W_OK | constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EACCES" && code !== "EPERM" && code !== "EROFS") throw err;
    throw new DataDirError("EGRESS_ERR_DATA_DIR_NOT_WRITABLE", notWritable(dataDir, code));
  }
  // Files another user wrote (the pod's UID changed, a restore as root) are as much in the way as the directory.
  for (const name of readdirSync(dataDir)) {
    const file = join(dataDir, name);
    try {
      if (statSync(file).isFile()) accessSync(file, constants.R_OK | constants.W_OK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EACCES") continue;
      const stat = statSync(file);
      throw new DataDirError(
        "EGRESS_ERR_DATA_DIR_NOT_WRITABLE",
        `${file} is not readable and writable by this process (${whoAmI()}); it is owned by uid ${stat.uid}, gid ${stat.gid}, ` +
          `mode ${(stat.mode & 0o777).toString(8)}. Run the sidecar as the user that wrote it (a stable runAsUser), or give the ` +
          `files to this user (chown -R ${process.getuid?.()} ${dataDir}).`,
      );
    }
  }
}

const whoAmI = () =>
  `uid ${process.getuid?.()}, gid ${process.getgid?.()}${process.getgroups ? ` (groups ${process.getgroups().join(",")})` : ""}`;

function notWritable(dataDir: string, code: string): string {
  const who = whoAmI();
  if (code === "EROFS")
    return `the data dir ${dataDir} is on a read-only filesystem; mount a writable volume there (the outbox must persist) or set dataDir elsewhere`;
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

/**
 * Gives group 0 read and write on the files this process owns in the data dir (SQLite creates its files 0644 less
 * the umask, so without this the group could only read them). Nothing to do unless `groupShared()`.
 */
export function shareWithGroup(dataDir: string): void {
  if (!groupShared()) return;
  const uid = process.getuid?.();
  for (const name of readdirSync(dataDir)) {
    const file = join(dataDir, name);
    const stat = statSync(file);
    if (stat.isFile() && stat.uid === uid) chmodSync(file, (stat.mode & 0o777) | 0o060);
  }
}
