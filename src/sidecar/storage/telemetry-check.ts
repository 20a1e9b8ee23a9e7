import { existsSync, rmSync, statSync } from "node:fs";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import { outboxPath, telemetryPath } from "./outbox-schema.ts";
import { KeyValues } from "./key-values.ts";
import { damageOf, quickCheckProblem, truncation, WAL_HEADER_BYTES } from "./sqlite-header.ts";

/**
 * Whether telemetry.db was left safe, kept in outbox.db (synced) and not in telemetry.db itself, whose unsynced
 * checkpoints could bring back an older page after a power cut: "open" while a sidecar may write it unsynced, "clean"
 * once one has closed it with a complete, synced checkpoint. Only a file not left "clean" can have been damaged by a
 * power cut.
 */
export const TELEMETRY_STATE = "telemetry.state";

/** Marks telemetry.db as being written (in outbox.db's `kv`, a synced commit) before any unsynced write to it. */
export function markOpen(state: KeyValues): void {
  state.set(TELEMETRY_STATE, "open");
}

/**
 * Checkpoints telemetry.db in full with syncs and, only when that worked (no reader held the log, the disk had room),
 * marks it clean: its next start need not read it in full. Otherwise it stays "open" and is checked in full then.
 */
export function closeCleanly(db: Database.Database, state: KeyValues): void {
  try {
    db.pragma("synchronous = FULL");
    db.pragma("busy_timeout = 0"); // a reader at the stop is not waited for: the stop has a deadline, the next start checks
    const [result] = db.pragma("wal_checkpoint(TRUNCATE)") as { busy: number; log: number; checkpointed: number }[];
    if (result && result.busy === 0 && result.log === result.checkpointed) state.set(TELEMETRY_STATE, "clean");
  } catch {
    // left "open": checked in full at the next start
  }
}

/**
 * telemetry.db syncs nothing (outbox.ts), so a power cut can leave it damaged. Checked at start: in full when the
 * last sidecar did not close it cleanly (whatever its size), else as outbox.db is (in full up to `fullCheckMaxBytes`,
 * else its header and last page). A damaged one is deleted with its side files, and the sidecar starts with an empty
 * one: it held only best-effort telemetry, and refusing to start over it would stop billing too. Said in a warning.
 * Any other failure to read it (permissions, a lock) deletes nothing and is left for the open to report.
 */
export function replaceDamagedTelemetry(dataDir: string, logger: Logger, fullCheckMaxBytes: number): void {
  const path = telemetryPath(dataDir);
  if (!existsSync(path)) return;
  const problem = damage(path, closedCleanly(dataDir) ? fullCheckMaxBytes : Number.POSITIVE_INFINITY);
  if (!problem) return;
  for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
  logger.warn(
    { file: path, problem },
    "telemetry.db was damaged (a power cut while it held records?): replaced by an empty one; the operational telemetry it held is lost, billing is not affected",
  );
}

/** What outbox.db says of how telemetry.db was left (false when it says nothing, or cannot be read: check in full). */
function closedCleanly(dataDir: string): boolean {
  const outbox = outboxPath(dataDir);
  if (!existsSync(outbox)) return false;
  let conn: Database.Database | undefined;
  try {
    conn = new Database(outbox, { readonly: true, fileMustExist: true });
    return new KeyValues(conn).get(TELEMETRY_STATE) === "clean";
  } catch {
    return false;
  } finally {
    conn?.close();
  }
}

function damage(path: string, fullCheckMaxBytes: number): string | undefined {
  const size = statSync(path).size;
  if (size === 0) return undefined; // created, never written
  const walFrames = existsSync(`${path}-wal`) && statSync(`${path}-wal`).size > WAL_HEADER_BYTES;
  const truncated = walFrames ? undefined : truncation(path, size);
  if (truncated) return truncated;
  let conn: Database.Database | undefined;
  try {
    conn = new Database(path, { readonly: true, fileMustExist: true });
    conn.pragma("user_version");
    // A file cut off before its schema's first commit reached the disk has nothing to lose: replaced too.
    if (!conn.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'outbox'").get()) return "no outbox table";
    if (size <= fullCheckMaxBytes) return quickCheckProblem(conn);
    conn.prepare("SELECT max(seq) FROM outbox").get();
    return undefined;
  } catch (err) {
    const damaged = damageOf(err);
    if (damaged) return damaged;
    throw err;
  } finally {
    conn?.close();
  }
}
