import { randomUUID } from "node:crypto";
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, join } from "node:path";
import Database from "better-sqlite3";
import type { Logger } from "pino";
import type { Clock } from "../../clock.ts";
import type { CodesWith } from "../../error-codes.ts";
import { DataDirError, EgressError } from "../../errors.ts";
import { Outbox, outboxPath } from "./outbox.ts";
import { isDiskFull } from "./disk-space.ts";
import { damageOf, quickCheckProblem, truncation, WAL_HEADER_BYTES } from "./sqlite-header.ts";
import { replaceDamagedTelemetry } from "./telemetry-check.ts";

/** Written at the first start: records that this data dir holds an outbox, and which one. */
export const MARKER_FILE = "egress-agent.json";
/** The same id, inside outbox.db: a file swapped in from elsewhere does not match the marker. */
const OUTBOX_ID_KEY = "outbox.id";
/**
 * Up to this size the whole file is read at start (PRAGMA quick_check: about 1 ms per MiB when cached, about
 * 14 ms per MiB cold on a 70 MB/s disk). Larger files get the header, truncation and schema checks only: a
 * 1M-record outbox (650 MiB) takes 0.6 s warm and 9 s cold to check in full.
 */
export const FULL_CHECK_MAX_BYTES = 32 * 2 ** 20;

interface Marker {
  outboxId: string;
  createdAt: string;
}

/** What start-up found in the data dir. */
type Finding =
  | { kind: "fresh" }
  | { kind: "sound"; marker: Marker | null; outboxId: string | null }
  | { kind: "refused"; error: DataDirError; previousOutboxId: string | null };

export interface OpenOutboxOptions {
  logger: Logger;
  /** Start a new, empty outbox when the one expected is missing, foreign or damaged; what was there is moved aside. */
  newOutbox?: boolean;
  now?: Clock;
  fullCheckMaxBytes?: number;
}

const START_AFRESH =
  "start it once with `egress-agent start --new-outbox`, which moves what is there aside (nothing is deleted) and starts a new, empty outbox";

/**
 * Opens the sidecar's outbox after checking that it is the one this data dir held: never silently a new, empty
 * one in place of a deleted, swapped or damaged file. Refusals are DataDirError (exit 3) naming the file and
 * the way out; the files are left as they were.
 */
export function openOutbox(dataDir: string, options: OpenOutboxOptions): Outbox {
  const now = options.now ?? Date.now;
  mkdirSync(dataDir, { recursive: true });
  let finding = inspect(dataDir, options.fullCheckMaxBytes ?? FULL_CHECK_MAX_BYTES);
  if (finding.kind === "refused") {
    if (!options.newOutbox) throw finding.error;
    const setAside = moveAside(dataDir, now());
    options.logger.warn(
      { dataDir, reason: finding.error.code, previousOutboxId: finding.previousOutboxId, setAside: setAside.dir, files: setAside.files },
      "--new-outbox: what was in the data dir is moved aside; starting a new, empty outbox",
    );
    finding = { kind: "fresh" };
  } else if (options.newOutbox && finding.kind === "sound") {
    options.logger.warn(
      { dataDir },
      "--new-outbox ignored: the outbox is present and sound; remove the flag so that a lost outbox is detected again",
    );
  }

  let outbox: Outbox;
  try {
    replaceDamagedTelemetry(dataDir, options.logger, options.fullCheckMaxBytes ?? FULL_CHECK_MAX_BYTES);
    outbox = new Outbox(dataDir, { now, logger: options.logger });
  } catch (err) {
    throw isDiskFull(err) ? diskFullAtStart(dataDir) : err;
  }
  try {
    const outboxId = (finding.kind === "sound" && (finding.outboxId ?? finding.marker?.outboxId)) || randomUUID();
    if (finding.kind !== "sound" || finding.outboxId === null) outbox.kv.set(OUTBOX_ID_KEY, outboxId);
    if (finding.kind !== "sound" || finding.marker === null) {
      writeMarker(dataDir, { outboxId, createdAt: new Date(now()).toISOString() });
      options.logger.info(
        { dataDir, outboxId },
        finding.kind === "fresh" ? "outbox created" : "data dir marker written for the outbox found there",
      );
    }
  } catch (err) {
    outbox.close();
    throw isDiskFull(err) ? diskFullAtStart(dataDir) : err;
  }
  return outbox;
}

function diskFullAtStart(dataDir: string): EgressError {
  return new EgressError(
    "EGRESS_ERR_DISK_FULL",
    `the data dir ${dataDir} is full, the outbox cannot even be opened: free space on its volume, then start again`,
  );
}

function inspect(dataDir: string, fullCheckMaxBytes: number): Finding {
  const db = outboxPath(dataDir);
  const markerPath = join(dataDir, MARKER_FILE);
  let marker: Marker | null;
  try {
    marker = readMarker(markerPath);
  } catch (err) {
    return { kind: "refused", error: err as DataDirError, previousOutboxId: null };
  }
  const walFrames = sizeOf(`${db}-wal`) > WAL_HEADER_BYTES;
  const expected = marker
    ? `${markerPath} shows that this data dir held outbox ${marker.outboxId} (created ${marker.createdAt})`
    : undefined;
  const dbSize = existsSync(db) ? statSync(db).size : null;

  if (dbSize === null) {
    if (!expected && !walFrames) return { kind: "fresh" };
    const because = expected ?? `${db}-wal is there, holding transactions of an outbox.db that is gone`;
    return refuse(
      "EGRESS_ERR_OUTBOX_MISSING",
      `${db} is missing, but ${because}. Starting a new one would lose its undelivered billing records and the license token cache. ` +
        `If the volume is not the one expected (a wrong or unmounted volume, a restore that left the file out), fix that and start again; to start afresh on purpose, ${START_AFRESH}`,
      marker,
    );
  }
  if (dbSize === 0) {
    if (!expected && !walFrames) return { kind: "fresh" }; // a first start that stopped before its first write
    return refuse(
      "EGRESS_ERR_OUTBOX_CORRUPT",
      damaged(db, `the file is empty (0 bytes), but ${expected ?? "its -wal file holds transactions"}`),
      marker,
    );
  }

  const truncated = walFrames ? undefined : truncation(db, dbSize);
  if (truncated) return refuse("EGRESS_ERR_OUTBOX_CORRUPT", damaged(db, truncated), marker);

  // A refused start changes nothing: the side files the read-only check has to create (an empty WAL, its
  // index) go again unless the outbox is opened after all.
  const created = [`${db}-wal`, `${db}-shm`].filter((file) => !existsSync(file));
  let finding: Finding | undefined;
  try {
    finding = check(db, dbSize, fullCheckMaxBytes, marker, expected);
    return finding;
  } catch (err) {
    throw isDiskFull(err) ? diskFullAtStart(dataDir) : err;
  } finally {
    if (finding?.kind !== "sound" && sizeOf(`${db}-wal`) <= WAL_HEADER_BYTES) created.forEach(unlinkQuietly);
  }
}

/** Reads an existing outbox.db read-only: is it sound, and is it the outbox the marker names? */
function check(db: string, dbSize: number, fullCheckMaxBytes: number, marker: Marker | null, expected: string | undefined): Finding {
  let outboxId: string | null = null;
  let isOutbox = false;
  let problem: string | undefined;
  const conn = openReadonly(db);
  try {
    conn.pragma("user_version");
    if (dbSize <= fullCheckMaxBytes) problem = quickCheckProblem(conn);
    const tables = new Set(
      (conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name),
    );
    isOutbox = tables.has("outbox");
    if (isOutbox) conn.prepare("SELECT max(seq) FROM outbox").get(); // reads the table's last leaf: a cheap probe for large files
    if (tables.has("kv"))
      outboxId = (conn.prepare("SELECT value FROM kv WHERE key = ?").get(OUTBOX_ID_KEY) as { value: string } | undefined)?.value ?? null;
  } catch (err) {
    if (isDiskFull(err)) throw err;
    problem = damageOf(err);
    if (!problem) {
      const code = String((err as { code?: unknown }).code ?? "");
      throw new EgressError("EGRESS_ERR_OUTBOX_OPEN", `cannot read ${db}: ${(err as Error).message} (${code || "error"})`);
    }
  } finally {
    conn.close();
  }

  if (problem) return refuse("EGRESS_ERR_OUTBOX_CORRUPT", damaged(db, problem), marker);
  if (marker && ((outboxId !== null && outboxId !== marker.outboxId) || (outboxId === null && !isOutbox))) {
    return refuse(
      "EGRESS_ERR_OUTBOX_FOREIGN",
      `${db} is not the outbox this data dir held: ${expected}, but the file is ${outboxId === null ? "no outbox at all" : `outbox ${outboxId}`}. ` +
        `Put back the outbox.db that belongs here (the undelivered billing records are in it); to start afresh on purpose instead, ${START_AFRESH}`,
      marker,
    );
  }
  return { kind: "sound", marker, outboxId };
}

function refuse(code: CodesWith<{ exit: 3 }>, message: string, marker: Marker | null): Finding {
  return { kind: "refused", error: new DataDirError(code, message), previousOutboxId: marker?.outboxId ?? null };
}

function damaged(db: string, problem: string): string {
  return (
    `${db} is damaged (${problem}); the sidecar will not write to it. Keep the file: restore outbox.db from a backup and start again, ` +
    `or first save what can still be read (\`sqlite3 ${db} .recover > outbox.sql\`, or \`egress-agent export --since 1970-01-01 --config FILE\` for billing records) and then ${START_AFRESH}`
  );
}

function openReadonly(db: string): Database.Database {
  try {
    return new Database(db, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new EgressError("EGRESS_ERR_OUTBOX_OPEN", `cannot open ${db}: ${(err as Error).message}`);
  }
}

function readMarker(path: string): Marker | null {
  if (!existsSync(path)) return null;
  try {
    const marker = JSON.parse(readFileSync(path, "utf8")) as Partial<Marker>;
    if (typeof marker.outboxId === "string" && typeof marker.createdAt === "string")
      return { outboxId: marker.outboxId, createdAt: marker.createdAt };
  } catch {
    // unreadable: below
  }
  throw new DataDirError(
    "EGRESS_ERR_DATA_DIR_MARKER",
    `${path} is not the marker this sidecar writes ({outboxId, createdAt}). ` +
      `Restore it from the same backup as outbox.db; or, if outbox.db beside it is the one to use, move the marker out of the directory and start again ` +
      `(it is written anew); to start afresh on purpose instead, ${START_AFRESH}`,
  );
}

/** Atomically: a crash leaves the old marker or the new one, never half of one. */
function writeMarker(dataDir: string, marker: Marker): void {
  const path = join(dataDir, MARKER_FILE);
  const note =
    "Written by egress-agent: outbox.db in this directory is this outbox. If outbox.db goes missing or is replaced, the sidecar refuses to start (see egress-agent start --new-outbox).";
  writeFileSync(`${path}.tmp`, `${JSON.stringify({ ...marker, note }, null, 2)}\n`, { mode: 0o600, flush: true });
  renameSync(`${path}.tmp`, path);
  syncDir(dataDir);
}

/** Moves the outbox files and the marker into a new `set-aside-<time>-<random>/` in the data dir. */
function moveAside(dataDir: string, now: number): { dir: string; files: string[] } {
  const dir = mkdtempSync(join(dataDir, `set-aside-${new Date(now).toISOString().replace(/[-:]/g, "").replace(/\.\d+/, "")}-`));
  const db = outboxPath(dataDir);
  const files = [db, `${db}-wal`, `${db}-shm`, join(dataDir, MARKER_FILE)].filter((file) => existsSync(file));
  for (const file of files) renameSync(file, join(dir, basename(file)));
  syncDir(dataDir);
  return { dir, files: files.map((file) => basename(file)) };
}

function syncDir(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function sizeOf(path: string): number {
  return existsSync(path) ? statSync(path).size : -1;
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // gone already
  }
}
