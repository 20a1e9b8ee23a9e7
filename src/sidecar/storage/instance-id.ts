import { randomUUID } from "node:crypto";
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { DataDirError } from "../../errors.ts";
import { INSTANCE_ID_PATTERN } from "../../protocol/instance.ts";

/** This sidecar's instance id (a UUID v4 on one line), made at its first start; the beacon counts instances by it. */
export const INSTANCE_ID_FILE = "instance-id";

/**
 * The instance id kept in the data dir, or null when there is none yet (a data dir no sidecar of this version has
 * started on). A file that is there but does not hold one UUID is refused, never replaced: a new id would count
 * this sidecar twice at the vendor, and a damaged file may mean the data dir is not the one expected.
 */
export function readInstanceId(dataDir: string): string | null {
  const path = join(dataDir, INSTANCE_ID_FILE);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
  const id = text.trim();
  if (!INSTANCE_ID_PATTERN.test(id)) {
    throw new DataDirError(
      "EGRESS_ERR_INSTANCE_ID",
      `${path} does not hold an instance id (one UUID on one line): restore it from the same backup as outbox.db, ` +
        "or delete it to start as a new instance (the vendor then sees one more instance)",
    );
  }
  return id.toLowerCase();
}

/** The data dir's instance id; at the first start a new random one, written atomically (owner-only, synced). */
export function ensureInstanceId(dataDir: string, logger: Logger): string {
  const existing = readInstanceId(dataDir);
  if (existing) return existing;
  const id = randomUUID();
  const path = join(dataDir, INSTANCE_ID_FILE);
  writeFileSync(`${path}.tmp`, `${id}\n`, { mode: 0o600, flush: true });
  renameSync(`${path}.tmp`, path);
  const fd = openSync(dataDir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  logger.info({ instanceId: id }, "instance id created");
  return id;
}
