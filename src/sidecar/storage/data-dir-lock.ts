import { readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { Clock } from "../../clock.ts";
import { DataDirError } from "../../errors.ts";

/** An SQLite file whose exclusive lock the running sidecar holds: the OS drops it when the process ends, even by kill -9. */
const LOCK_FILE = "sidecar.lock";
/** Who holds the lock, for the refusal's message (the lock file itself cannot be read while held). */
const HOLDER_FILE = "sidecar.holder.json";

interface Holder {
  pid: number;
  host: string;
  startedAt: string;
}

/**
 * Takes the data dir for this process alone. Two sidecars on one outbox would each hand the other's in-flight
 * records back to pending and fight over its database: the second is refused (exit 3) naming the first.
 * SQLite's own file lock (fcntl) is used, so it also holds across containers sharing a volume, and never
 * outlives its process.
 */
export function lockDataDir(dataDir: string, now: Clock = Date.now): { announce(): void; release(): void } {
  const db = new Database(join(dataDir, LOCK_FILE), { timeout: 0 });
  try {
    // The file stays empty: the lock is the point. A journal in memory leaves no second file beside it.
    db.pragma("locking_mode = EXCLUSIVE");
    db.pragma("journal_mode = MEMORY");
    db.exec("BEGIN EXCLUSIVE");
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code !== "SQLITE_BUSY") throw err;
    throw new DataDirError(
      "EGRESS_ERR_DATA_DIR_IN_USE",
      `data dir ${dataDir} is in use by another sidecar${describeHolder(dataDir)}: two sidecars on one outbox would send and release each other's records. Stop that one, or give this one a dataDir of its own`,
    );
  }
  return {
    /** Says who holds the lock, for a refused second start; called once the sidecar has started. */
    announce() {
      const holder: Holder = { pid: process.pid, host: hostname(), startedAt: new Date(now()).toISOString() };
      writeFileSync(join(dataDir, HOLDER_FILE), `${JSON.stringify(holder)}\n`);
    },
    release: () => db.close(), // closing ends the transaction and unlocks
  };
}

function describeHolder(dataDir: string): string {
  try {
    const holder = JSON.parse(readFileSync(join(dataDir, HOLDER_FILE), "utf8")) as Holder;
    return ` (pid ${holder.pid} on host ${holder.host}, started ${holder.startedAt})`;
  } catch {
    return "";
  }
}
