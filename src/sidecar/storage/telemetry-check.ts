import { existsSync, rmSync, statSync } from "node:fs";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import { telemetryPath } from "./outbox-schema.ts";
import { truncation } from "./sqlite-header.ts";

/** A WAL file of only its 32-byte header holds no transaction. */
const WAL_HEADER_BYTES = 32;

/**
 * telemetry.db syncs nothing (outbox.ts), so a power cut can leave it damaged. Checked at start as outbox.db is (in
 * full up to `fullCheckMaxBytes`, else its header and last page); a damaged one is deleted with its side files, and
 * the sidecar starts with an empty one: it held only best-effort telemetry, and refusing to start over it would stop
 * billing too. Said in a warning. Any other failure to read it is left for the open to report.
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
    if (size <= fullCheckMaxBytes) {
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
