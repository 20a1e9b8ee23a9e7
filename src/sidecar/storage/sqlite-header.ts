import { closeSync, openSync, readSync } from "node:fs";
import type Database from "better-sqlite3";

/** A WAL file of only its 32-byte header holds no transaction. */
export const WAL_HEADER_BYTES = 32;

/** The header's page count against the file's size: a file cut short (by a copy, a restore) is caught in O(1). */
export function truncation(db: string, size: number): string | undefined {
  const header = Buffer.alloc(100);
  const fd = openSync(db, "r");
  try {
    if (readSync(fd, header, 0, 100, 0) < 100) return `${size} bytes, shorter than a database header`;
  } finally {
    closeSync(fd);
  }
  if (header.toString("latin1", 0, 16) !== "SQLite format 3\0") return undefined; // not SQLite at all: the open says so
  const pageSize = header.readUInt16BE(16) === 1 ? 65536 : header.readUInt16BE(16);
  const pages = header.readUInt32BE(28);
  // The page count is valid when "version-valid-for" matches the change counter (always, for SQLite >= 3.7.0).
  if (pages === 0 || header.readUInt32BE(92) !== header.readUInt32BE(24) || pages * pageSize <= size) return undefined;
  return `truncated: its header counts ${pages} pages of ${pageSize} bytes (${pages * pageSize} bytes), the file has ${size}`;
}

/** What `PRAGMA quick_check` found wrong (its first few findings), or undefined when it says ok. */
export function quickCheckProblem(conn: Database.Database): string | undefined {
  let rows: { quick_check: string }[];
  try {
    rows = conn.pragma("quick_check(5)") as { quick_check: string }[];
  } catch (err) {
    // A page too damaged for the check to go on past it: still what the check found.
    const damaged = damageOf(err);
    if (damaged) return `PRAGMA quick_check: ${damaged}`;
    throw err;
  }
  return rows[0]?.quick_check === "ok" ? undefined : `PRAGMA quick_check: ${rows.map((r) => r.quick_check).join("; ")}`;
}

/** SQLite's words when an error says the file is damaged or no database; undefined for any other failure. */
export function damageOf(err: unknown): string | undefined {
  const code = String((err as { code?: unknown }).code ?? "");
  return code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB" ? `${(err as Error).message} (${code})` : undefined;
}
