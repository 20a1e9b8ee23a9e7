// The billing intake's writer thread (billing-writer.ts): its own connection to outbox.db, where each batch's inserts
// and commit run while the sidecar's thread goes on reading and checking the next batches.
import { workerData } from "node:worker_threads";
import { databaseUnavailable } from "../../database-unavailable.ts";
import { serveWrites } from "../../writer-thread-loop.ts";
import type { BillingRequest } from "./billing-writer.ts";
import { isDiskFull } from "./disk-space.ts";
import { OutboxInserter } from "./outbox-insert.ts";
import { openOutboxForIntake } from "./outbox-schema.ts";

const db = openOutboxForIntake((workerData as { dataDir: string }).dataDir);
const inserter = new OutboxInserter(db);

serveWrites<BillingRequest>(db, {
  insert: (request) => [inserter.insert("billing", request.records, request.now)],
  recordsOf: (request) => request.records.bodies.length,
  // The file held past the wait, or a full disk: each batch alone would only meet it again.
  sharedFailure: (err) => databaseUnavailable(err) || isDiskFull(err),
});
