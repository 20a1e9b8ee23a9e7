import { Answer } from "../../http/exchange.ts";
import type { HttpServer } from "../../http/server.ts";
import { parseRequest } from "../../http/validate.ts";
import { TransactionsRequest, type TransactionsAccepted } from "../../protocol/local-api.ts";
import { fastTransactionsRequest } from "../../protocol/trace-transaction-fast.ts";
import { isDiskFull, type DataDirSpace } from "../storage/disk-space.ts";
import type { BillingWriter } from "../storage/billing-writer.ts";
import type { RecordColumns } from "../storage/outbox-insert.ts";

/**
 * POST /v1/transactions: billing input from the instance. The whole batch is committed to the outbox (by its writer
 * thread) before the 202 (batches arriving together share one commit); a bad batch is 422 and stores nothing; an id
 * already held is not stored (or sent) twice. Below the data dir's delivery reserve (or on a full disk) it is 507
 * EGRESS_ERR_DISK_FULL and stores nothing; intake resumes by itself once there is room.
 */
export function registerTransactionsSource(app: HttpServer, writer: BillingWriter, onEnqueued: () => void, space: DataDirSpace): void {
  app.post(
    "/v1/transactions",
    async (request): Promise<Answer> => {
      const records = recordsOf(request);
      const accepted = records.bodies.length; // the thread has its own copy: nothing of the batch is held meanwhile
      space.assertRoomForBilling();
      let inserted: number;
      try {
        inserted = await writer.enqueue(records);
      } catch (err) {
        if (isDiskFull(err)) throw space.full();
        throw err;
      }
      onEnqueued();
      return new Answer(202, { accepted, duplicates: accepted - inserted } satisfies TransactionsAccepted);
    },
    // Served from the connection reserve, its bodies charged to the billing budget: no other client can take either.
    { reserved: true, budget: "billing" },
  );
}

/** The batch's records as the outbox stores them: validated (422 otherwise), each transaction in its canonical JSON. */
function recordsOf(request: { body: unknown }): RecordColumns {
  const transactions = parseRequest(TransactionsRequest, request.body, "body", fastTransactionsRequest).trace_transactions;
  return {
    recordIds: transactions.map((t) => t.id),
    bodies: transactions.map((t) => JSON.stringify(t)),
    attempts: transactions.map((t) => t.num_failed_send_attempts),
  };
}
