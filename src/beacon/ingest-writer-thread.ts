// The beacon's ingest writer thread (src/beacon/ingest-writer.ts): its own connection to beacon.db, where every
// ingest's inserts and commit run while the server's thread goes on parsing and checking the next requests.
import { type MessagePort, parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { databaseUnavailable } from "../database-unavailable.ts";
import { OtlpInserter } from "./otlp-insert.ts";
import { FIELDS_PER_ROW, TraceInserter, tuneForIngest } from "./trace-insert.ts";
import type { WriterReply, WriterRequest } from "./ingest-writer.ts";

const port = parentPort as MessagePort;
const { path, busyTimeoutMs } = workerData as { path: string; busyTimeoutMs: number };
const db = new Database(path, { fileMustExist: true });
db.pragma("synchronous = FULL");
db.pragma(`busy_timeout = ${busyTimeoutMs}`);
tuneForIngest(db);
const traces = new TraceInserter(db);
const otlp = new OtlpInserter(db);
port.postMessage("open" satisfies WriterReply);

/**
 * A commit takes no further request once it holds this many records: under a steady stream it still commits (and
 * answers) every so often, and a write on the server's own connection waits for at most one such commit.
 */
const COMMIT_RECORDS = 8000;
let closing = false;

/** The next request already queued, if any (a "close" is noted and the thread ends once this turn's work is done). */
function queued(): WriterRequest | undefined {
  for (;;) {
    const message = receiveMessageOnPort(port)?.message as WriterRequest | "close" | undefined;
    if (message !== "close") return message;
    closing = true;
  }
}

const recordsOf = (request: WriterRequest) =>
  "otlp" in request ? 1 : request.batches.reduce((n, b) => n + b.rows.length / FIELDS_PER_ROW, 0);

/** Rows new per trace batch (none for an OTLP request). */
function insert(request: WriterRequest): number[] {
  if ("batches" in request) return request.batches.map((b) => traces.insert(b.licenseId, b.rows, request.receivedAt));
  otlp.insert(request.otlp, request.receivedAt);
  return [];
}

/**
 * Inserts `requests`, and while they are inserted any that arrive meanwhile too (up to COMMIT_RECORDS), in one
 * transaction: the commit (its WAL write and fsync) is most of a drain's cost, and it is shared by all.
 */
const write = (requests: WriterRequest[], more: boolean) =>
  db.transaction(() => {
    const inserted: number[][] = [];
    let records = 0;
    for (let i = 0; i < requests.length; i++) {
      const r = requests[i]!;
      inserted.push(insert(r));
      records += recordsOf(r);
      const next = more && i === requests.length - 1 && records < COMMIT_RECORDS ? queued() : undefined;
      if (next) requests.push(next);
    }
    return inserted;
  })();

function fail(requests: readonly WriterRequest[], err: unknown): void {
  const { message, code } = err as { message?: unknown; code?: unknown };
  const error = { message: String(message ?? err), code: typeof code === "string" ? code : undefined };
  for (const r of requests) port.postMessage({ id: r.id, error } satisfies WriterReply);
}

function commit(requests: WriterRequest[], more: boolean): void {
  try {
    const inserted = write(requests, more);
    for (const [i, r] of requests.entries()) port.postMessage({ id: r.id, inserted: inserted[i]! } satisfies WriterReply);
  } catch (err) {
    if (databaseUnavailable(err)) {
      // The file held by another connection past the wait: what is queued would only wait as long again.
      const waiting: WriterRequest[] = [];
      for (let next = queued(); next; next = queued()) waiting.push(next);
      fail([...requests, ...waiting], err);
    } else if (requests.length === 1) fail(requests, err);
    // Requests that shared a commit only by arriving together are committed apart, so one group's fault fails that
    // group alone (the server's GroupCommit then splits it by job).
    else for (const r of requests) commit([r], false);
  }
}

port.on("message", (first: WriterRequest | "close") => {
  if (first === "close") closing = true;
  else commit([first], true);
  if (closing) {
    db.close();
    port.close();
  }
});
