import { existsSync, rmSync, statSync } from "node:fs";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import { telemetryPath } from "./outbox-schema.ts";
import { KeyValues } from "./key-values.ts";
import { truncation, WAL_HEADER_BYTES } from "./sqlite-header.ts";

/**
 * In telemetry.db, synced: "open" while a sidecar may be writing it unsynced, "clean" once one closed it with a
 * synced checkpoint. Only a file left "open" can have been damaged by a power cut.
 */
const STATE = "telemetry.state";

/** Marks telemetry.db as being written, with a synced commit, before any unsynced one. */
export function markOpen(db: Database.Database): void {
  synced(db, () => new KeyValues(db).set(STATE, "open"));
}

/**
 * Marks telemetry.db as closed cleanly and checkpoints it, both synced: its next start need not read it in full.
 * Best effort (a full disk, a reader holding the WAL): a file left "open" is only checked in full at the next start.
 */
export function closeCleanly(db: Database.Database): void {
  try {
    synced(db, () => {
      new KeyValues(db).set(STATE, "clean");
      db.pragma("wal_checkpoint(TRUNCATE)");
    });
  } catch {
    // left "open": checked in full at the next start
  }
}

function synced(db: Database.Database, work: () => void): void {
  db.pragma("synchronous = FULL");
  try {
    work();
  } finally {
    db.pragma("synchronous = OFF");
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
  const problem = damage(path, fullCheckMaxBytes);
  if (!problem) return;
  for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
  logger.warn(
    { file: path, problem },
    "telemetry.db was damaged (a power cut while it held records?): replaced by an empty one; the operational telemetry it held is lost, billing is not affected",
  );
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
    const clean = new KeyValues(conn).get(STATE) === "clean";
    if (!clean || size <= fullCheckMaxBytes) {
      const rows = conn.pragma("quick_check(5)") as { quick_check: string }[];
      if (rows[0]?.quick_check !== "ok") return `PRAGMA quick_check: ${rows.map((r) => r.quick_check).join("; ")}`;
    } else conn.prepare("SELECT max(seq) FROM outbox").get();
    return undefined;
  } catch (err) {
    const code = String((err as { code?: unknown }).code ?? "");
    if (code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB") return `${(err as Error).message} (${code})`;
    throw err;
  } finally {
    conn?.close();
  }
}
