// A writer thread for test/writer-thread.test.ts: it opens (an in-memory database), answers each request with its
// `n`, and ends abruptly (as on a native crash or an out-of-memory kill) on a request that says `crash`.
import { appendFileSync } from "node:fs";
import { workerData } from "node:worker_threads";
import Database from "better-sqlite3";
import { serveWrites } from "../../src/writer-thread-loop.ts";

// The test counts the threads that started, and those that have ended.
const { starts } = workerData as { starts: string };
appendFileSync(starts, "started\n");
process.on("exit", () => appendFileSync(starts, "ended\n"));
const db = new Database(":memory:");
serveWrites<{ n: number; crash?: boolean }>(db, {
  insert: (request) => (request.crash ? process.exit(3) : [request.n]),
  recordsOf: () => 1,
  sharedFailure: () => false,
});
