import { closeSync, constants, fstatSync, ftruncateSync, openSync, readSync, rmSync } from "node:fs";
import { DeployerError } from "./deployer.ts";

/**
 * The files the control plane itself writes and reads in a deployment's directory (the build's and the agent
 * server's logs). The deployment's code writes that directory too, so it may have put a link where a log goes: a
 * symbolic link to the control plane's key, a hard link to a file of its own user's elsewhere, a FIFO that blocks.
 * The control plane follows none of them: it opens without following a symbolic link, accepts only a regular file
 * with no other name, and otherwise removes what is there and makes the file anew (owner-only).
 */
export function openDeploymentFile(path: string, mode: "append" | "truncate"): number {
  const flags = constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  for (let attempt = 0; attempt < 3; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, mode === "append" ? flags | constants.O_APPEND : flags, 0o600);
    } catch (err) {
      if (!["ELOOP", "ENXIO", "EISDIR", "EMLINK"].includes((err as NodeJS.ErrnoException).code ?? "")) throw err;
      rmSync(path, { recursive: true, force: true }); // removes a link itself, never what it points to
      continue;
    }
    const stat = fstatSync(fd);
    if (stat.isFile() && stat.nlink === 1) {
      // Truncated only now, on the descriptor of the file checked: O_TRUNC would have emptied a hard link's other name.
      if (mode === "truncate") ftruncateSync(fd, 0);
      return fd;
    }
    closeSync(fd);
    rmSync(path, { recursive: true, force: true });
  }
  throw new DeployerError(`${path}: the deployment keeps replacing it`);
}

/** The most of a log a failure summary reads: its error lines are at the end. */
export const TAIL_BYTES = 64 * 1024;

/**
 * What `fd` holds from `offset` on, its last TAIL_BYTES at most (a log the control plane opened with
 * openDeploymentFile). The deployment writes the file, so its size is the deployment's to choose (a sparse 1 GiB file
 * costs it nothing): never read whole.
 */
export function readFrom(fd: number, offset: number): string {
  const size = fstatSync(fd).size;
  offset = Math.max(offset, size - TAIL_BYTES);
  const buffer = Buffer.alloc(Math.max(0, size - offset));
  let read = 0;
  while (read < buffer.length) {
    const n = readSync(fd, buffer, read, buffer.length - read, offset + read);
    if (n === 0) break;
    read += n;
  }
  return buffer.subarray(0, read).toString("utf8");
}
