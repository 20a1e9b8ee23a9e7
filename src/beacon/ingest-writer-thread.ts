// The beacon's ingest writer thread (src/beacon/ingest-writer.ts): its own connection to beacon.db, where every
// ingest's inserts and commit run while the server's thread goes on parsing and checking the next requests.
import { workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { databaseUnavailable } from "../database-unavailable.ts";
import type { WriterRequest } from "../writer-thread.ts";
import { serveWrites } from "../writer-thread-loop.ts";
import type { IngestRequest } from "./ingest-writer.ts";
import { OtlpInserter } from "./otlp-insert.ts";
import { FIELDS_PER_ROW, TraceInserter, tuneForIngest } from "./trace-insert.ts";

const { path, busyTimeoutMs } = workerData as { path: string; busyTimeoutMs: number };
const db = new Database(path, { fileMustExist: true });
db.pragma("synchronous = FULL");
db.pragma(`busy_timeout = ${busyTimeoutMs}`);
tuneForIngest(db);
const traces = new TraceInserter(db);
const otlp = new OtlpInserter(db);

serveWrites<IngestRequest>(db, {
  /** Rows new per trace batch (none for an OTLP request). */
  insert(request: WriterRequest<IngestRequest>): number[] {
    if ("batches" in request) return request.batches.map((b) => traces.insert(b.licenseId, b.rows, request.receivedAt));
    otlp.insert(request.otlp, request.receivedAt);
    return [];
  },
  recordsOf: (request) => ("otlp" in request ? 1 : request.batches.reduce((n, b) => n + b.rows.length / FIELDS_PER_ROW, 0)),
  // The file held by another connection past the wait: what is queued would only wait as long again.
  sharedFailure: databaseUnavailable,
});
