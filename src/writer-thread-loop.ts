// The thread side of src/writer-thread.ts: takes requests from the port and commits them, several at once.
import { type MessagePort, parentPort, receiveMessageOnPort } from "node:worker_threads";
import type Database from "better-sqlite3";
import type { WriterReply, WriterRequest } from "./writer-thread.ts";

/**
 * A commit takes no further request once it holds this many records: under a steady stream it still commits (and
 * answers) every so often, and a write on another connection (the process's own) waits for at most one such commit.
 */
const COMMIT_RECORDS = 8000;

export interface Writes<Body> {
  /** Writes one request (inside the loop's transaction); its results go back to the sender. */
  insert(request: WriterRequest<Body>): number[];
  /** How many records a request holds (to bound a commit). */
  recordsOf(request: WriterRequest<Body>): number;
  /**
   * A failure that is no one request's (the file held by another connection past the wait, a full disk): it fails
   * every request queued too, which alone would only meet it again. Any other failure of a shared commit is tried
   * again request by request, so one sender's fault fails that sender alone.
   */
  sharedFailure(err: unknown): boolean;
}

/** Serves the thread's requests on `db` (opened by the thread) until the host asks it to close; then closes `db`. */
export function serveWrites<Body>(db: Database.Database, writes: Writes<Body>): void {
  const port = parentPort as MessagePort;
  let closing = false;

  /** The next request already queued, if any (a "close" is noted and the thread ends once this turn's work is done). */
  function queued(): WriterRequest<Body> | undefined {
    for (;;) {
      const message = receiveMessageOnPort(port)?.message as WriterRequest<Body> | "close" | undefined;
      if (message !== "close") return message;
      closing = true;
    }
  }

  /** `requests`, and (when `more`) those that arrive while they are written, up to COMMIT_RECORDS, in one transaction. */
  const write = (requests: WriterRequest<Body>[], more: boolean) =>
    db.transaction(() => {
      const results: number[][] = [];
      let records = 0;
      for (let i = 0; i < requests.length; i++) {
        const r = requests[i]!;
        results.push(writes.insert(r));
        records += writes.recordsOf(r);
        const next = more && i === requests.length - 1 && records < COMMIT_RECORDS ? queued() : undefined;
        if (next) requests.push(next);
      }
      return results;
    })();

  function fail(requests: readonly WriterRequest<Body>[], err: unknown): void {
    const { message, code } = err as { message?: unknown; code?: unknown };
    const error = { message: String(message ?? err), code: typeof code === "string" ? code : undefined };
    for (const r of requests) port.postMessage({ id: r.id, error } satisfies WriterReply);
  }

  function commit(requests: WriterRequest<Body>[], more: boolean): void {
    try {
      const results = write(requests, more);
      for (const [i, r] of requests.entries()) port.postMessage({ id: r.id, results: results[i]! } satisfies WriterReply);
    } catch (err) {
      if (writes.sharedFailure(err)) {
        const waiting: WriterRequest<Body>[] = [];
        for (let next = queued(); next; next = queued()) waiting.push(next);
        fail([...requests, ...waiting], err);
      } else if (requests.length === 1) fail(requests, err);
      // Requests that shared a commit only by arriving together are committed apart.
      else for (const r of requests) commit([r], false);
    }
  }

  port.on("message", (first: WriterRequest<Body> | "close") => {
    if (first === "close") closing = true;
    else commit([first], true);
    if (closing) {
      db.close();
      port.close();
    }
  });
  port.postMessage("open" satisfies WriterReply);
}
