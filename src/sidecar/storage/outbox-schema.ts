import { existsSync, mkdirSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import Database from "better-sqlite3";
import { EgressError } from "../../errors.ts";

const schema = `
CREATE TABLE IF NOT EXISTS outbox (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  stream TEXT NOT NULL,
  record_id TEXT,
  body TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sending', 'completed', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  size INTEGER NOT NULL DEFAULT 0,
  enqueued_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_error TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS outbox_record_id ON outbox (stream, record_id) WHERE record_id IS NOT NULL;
-- Covers the send path's queries (next batch, pending head): size and enqueued_at come from the index, because
-- reading them from a row means walking its body's overflow pages first (they follow it in the row).
CREATE INDEX IF NOT EXISTS outbox_by_state ON outbox (stream, state, seq, size, enqueued_at);
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;
// telemetry.db's only: its byte cap sums sizes on every enqueue, from this index, never from the (large) rows. In
// outbox.db (billing and usage, whose rows are never in it) testing each insert against its condition made the
// billing intake's inserts a fifth slower (bench/RESULTS.md), so there it is dropped.
const telemetrySizeIndex =
  "CREATE INDEX IF NOT EXISTS outbox_telemetry_size ON outbox (stream, state, size) WHERE stream IN ('metrics', 'traces', 'logs')";

/**
 * 2 added `size` (body bytes), which the telemetry byte cap and byte-bounded batches read; 3 widened outbox_by_state;
 * 4 keeps a canonical UUID id as its 16 bytes (record-key.ts). Version 4 is a new file's only: a file of version 3
 * keeps its ids as text, and its version, since converting them means rewriting every row and index entry (26 s per
 * million records at start, and a busy instance's file holds a week of delivered records).
 */
const SCHEMA_VERSION = 4;
const IDS_AS_TEXT = 3;

export const outboxPath = (dataDir: string) => join(dataDir, "outbox.db");
/** The OTLP signals' queue (outbox.ts): the same schema in a file of its own, which syncs nothing. */
export const telemetryPath = (dataDir: string) => join(dataDir, "telemetry.db");

/** The outbox file of a data dir, opened read-only for a tool beside (or without) the sidecar. */
export function openOutboxReadonly(dataDir: string): Database.Database {
  const path = outboxPath(dataDir);
  if (!existsSync(path)) throw new EgressError("EGRESS_ERR_NO_OUTBOX", `no outbox at ${path}: has the sidecar run with this dataDir?`);
  return new Database(path, { readonly: true });
}

/** Read-only, for a tool that reads records (export): only a file of a version it reads (3 or 4); it upgrades none. */
export function openOutboxToRead(dataDir: string): Database.Database {
  return ofReadableVersion(openOutboxReadonly(dataDir));
}

/**
 * telemetry.db read-only for a tool (preview); an empty queue in memory where there is none yet (a data dir of an
 * older sidecar, or one that has never relayed) or it cannot be read: it is best effort, the next start replaces a
 * damaged one (so nothing of it would be sent), and billing's tools (export) must not fail over it.
 */
export function openTelemetryToRead(dataDir: string): Database.Database {
  const path = telemetryPath(dataDir);
  let file: Database.Database | undefined;
  try {
    if (existsSync(path)) {
      file = ofReadableVersion(new Database(path, { readonly: true }));
      file.prepare("SELECT max(seq) FROM outbox").get();
      return file;
    }
  } catch {
    if (file?.open) file.close(); // an empty queue, below
  }
  const db = new Database(":memory:");
  db.exec(schema);
  db.exec(telemetrySizeIndex);
  return db;
}

function ofReadableVersion(db: Database.Database): Database.Database {
  const version = db.pragma("user_version", { simple: true }) as number;
  if (version !== SCHEMA_VERSION && version !== IDS_AS_TEXT) {
    db.close();
    throw new EgressError(
      "EGRESS_ERR_OUTBOX_VERSION",
      `${basename(db.name)} has schema version ${version}, this tool reads ${IDS_AS_TEXT} and ${SCHEMA_VERSION}: ${
        version > SCHEMA_VERSION ? "use the tool of the sidecar's version" : "start the sidecar of this version once to upgrade it"
      }`,
    );
  }
  return db;
}

/** Whether an outbox file keeps canonical UUID ids as 16-byte keys (a new file) or as text (one of version 3). */
export const keysIds = (db: Database.Database) => (db.pragma("user_version", { simple: true }) as number) === SCHEMA_VERSION;

/** The sidecar's own connection to outbox.db: the file created, or upgraded in place from an older sidecar's. */
export function openOutboxToWrite(dataDir: string): Database.Database {
  // FULL: a commit survives power loss, not only a process crash (billing's intake commits on a connection of its own,
  // openOutboxForIntake, as durably: the 202 to the instance depends on it).
  return openToWrite(outboxPath(dataDir), { synchronous: "FULL", cacheKiB: OWN_CACHE_KIB, telemetry: false });
}

/**
 * The sidecar's own connection to telemetry.db. Synchronous OFF: neither its commits nor its checkpoints wait for
 * the disk, so relaying never does; a power cut may lose or damage what it holds, and a damaged file is replaced at
 * start (data-dir.ts). Its page cache is small: its queries read the index heads and the rows being sent.
 */
export function openTelemetryToWrite(dataDir: string): Database.Database {
  return openToWrite(telemetryPath(dataDir), { synchronous: "OFF", cacheKiB: 2048, telemetry: true });
}

/** outbox.db's page cache: the billing intake's connection keeps the hot part of the id index (4 MiB: 2, 4 and 8 took
 * the ingest at one rate, its peak 4 to 6 MiB higher at 8; 16 and 32 raised it more, bench/); the sidecar's own reads
 * the index heads and the rows being sent. */
const INTAKE_CACHE_KIB = 4096;
const OWN_CACHE_KIB = 2048;

/**
 * A second connection to outbox.db, for the billing intake's writer thread (billing-writer.ts): the file the sidecar
 * opened (and upgraded) at start, tuned as its own connection is.
 */
export function openOutboxForIntake(dataDir: string): Database.Database {
  const db = new Database(outboxPath(dataDir), { fileMustExist: true });
  tune(db, { synchronous: "FULL", cacheKiB: INTAKE_CACHE_KIB });
  return db;
}

function tune(db: Database.Database, o: { synchronous: "FULL" | "OFF"; cacheKiB: number }): void {
  db.pragma(`synchronous = ${o.synchronous}`);
  db.pragma("busy_timeout = 5000");
  // A batch's savepoint journal stays in memory: past 64 KiB (four 16 KiB pages) SQLite spills it to a temp file, and
  // the image's root file system, temp dirs included, may be read-only. It holds only the pages one batch changes.
  db.pragma("temp_store = MEMORY");
  db.pragma(`cache_size = -${o.cacheKiB}`);
  // The WAL is checkpointed at 4 MiB (SQLite's default of 1,000 pages, in 4 KiB pages), well inside the 16 MiB the
  // data dir keeps free for delivery (disk-space.ts); the beacon lets its WAL grow more.
  db.pragma(`wal_autocheckpoint = ${(4 * 2 ** 20) / (db.pragma("page_size", { simple: true }) as number)}`);
}

function openToWrite(path: string, o: { synchronous: "FULL" | "OFF"; cacheKiB: number; telemetry: boolean }): Database.Database {
  mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  // Taken by a new file only (an existing one keeps its own): 16 KiB pages made the billing intake's inserts and
  // commits a fifth to a third cheaper than SQLite's 4 KiB (bench/RESULTS.md).
  db.pragma("page_size = 16384");
  db.pragma("journal_mode = WAL");
  tune(db, o);
  const version = db.pragma("user_version", { simple: true }) as number;
  if (version > SCHEMA_VERSION) {
    db.close();
    throw new EgressError(
      "EGRESS_ERR_OUTBOX_VERSION",
      `${basename(path)} has schema version ${version}, newer than this sidecar (${SCHEMA_VERSION}); upgrade the sidecar`,
    );
  }
  db.transaction(() => {
    if (version === 1) {
      db.exec("ALTER TABLE outbox ADD COLUMN size INTEGER NOT NULL DEFAULT 0");
      db.exec("UPDATE outbox SET size = length(CAST(body AS BLOB))");
    }
    if (version > 0 && version < 3) db.exec("DROP INDEX IF EXISTS outbox_by_state"); // recreated wider below
    db.exec(schema);
    db.exec(o.telemetry ? telemetrySizeIndex : "DROP INDEX IF EXISTS outbox_telemetry_size");
    // telemetry.db holds no ids: a new one stays readable by the sidecar before version 4 (a roll back).
    const keyed = version === SCHEMA_VERSION || (version === 0 && !o.telemetry);
    db.pragma(`user_version = ${keyed ? SCHEMA_VERSION : IDS_AS_TEXT}`);
  })();
  return db;
}
