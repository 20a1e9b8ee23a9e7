// The beacon's trace writer thread (src/beacon/trace-writer.ts): its own connection to beacon.db, where every
// ingest's inserts and commit run while the server's thread goes on parsing and checking the next requests.
import { type MessagePort, parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { databaseUnavailable } from "../database-unavailable.ts";
import { TraceInserter, tuneForIngest } from "./trace-insert.ts";
import type { WriterReply, WriterRequest } from "./trace-writer.ts";

const port = parentPort as MessagePort;
const { path, busyTimeoutMs } = workerData as { path: string; busyTimeoutMs: number };
const db = new Database(path, { fileMustExist: true });
db.pragma("synchronous = FULL");
db.pragma(`busy_timeout = ${busyTimeoutMs}`);
tuneForIngest(db);
const inserter = new TraceInserter(db);

/** Most batches one commit takes: a steady stream of ingests still commits (and answers) every so often. */
const MAX_COMMIT_BATCHES = 16;
let closing = false;

/** The next request already queued, if any (a "close" is noted and the thread ends once this turn's work is done). */
function queued(): WriterRequest | undefined {
  for (;;) {
    const message = receiveMessageOnPort(port)?.message as WriterRequest | "close" | undefined;
    if (message !== "close") return message;
    closing = true;
  }
}

/**
 * Inserts `requests`, and while they are inserted any that arrive meanwhile too (up to MAX_COMMIT_BATCHES), in one
 * transaction: the commit (its WAL write and fsync) is most of a drain's cost, and it is shared by all.
 */
const write = (requests: WriterRequest[], more: boolean) =>
  db.transaction(() => {
    const inserted: number[][] = [];
    let batches = 0;
    for (let i = 0; i < requests.length; i++) {
      const r = requests[i]!;
      inserted.push(r.batches.map((b) => inserter.insert(b.licenseId, b.rows, r.receivedAt)));
      batches += r.batches.length;
      const next = more && i === requests.length - 1 && batches < MAX_COMMIT_BATCHES ? queued() : undefined;
      if (next) requests.push(next);
    }
    return inserted;
  })();

const failure = (err: unknown): WriterReply["error"] => {
  const { message, code } = err as { message?: unknown; code?: unknown };
  return { message: String(message ?? err), code: typeof code === "string" ? code : undefined };
};

function commit(requests: WriterRequest[], more: boolean): void {
  try {
    const inserted = write(requests, more);
    for (const [i, r] of requests.entries()) port.postMessage({ id: r.id, inserted: inserted[i] } satisfies WriterReply);
  } catch (err) {
    // Requests that shared a commit only by arriving together are committed apart, so one group's fault fails that
    // group alone (the server's GroupCommit then splits it by job); the database away fails them all at once.
    if (requests.length === 1 || databaseUnavailable(err) || (err as { code?: unknown }).code === "SQLITE_BUSY") {
      for (const r of requests) port.postMessage({ id: r.id, error: failure(err) } satisfies WriterReply);
    } else for (const r of requests) commit([r], false);
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
