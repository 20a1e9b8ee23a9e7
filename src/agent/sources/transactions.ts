import type { FastifyInstance } from "fastify";
import { HttpError } from "../../errors.ts";
import { parseRequest } from "../../http/validate.ts";
import { TransactionsRequest, type TransactionsAccepted } from "../../protocol/local-api.ts";
import type { Outbox } from "../outbox.ts";

/**
 * POST /v1/transactions: billing input from the instance. The whole batch is committed to the outbox before
 * the 202; a bad batch is 422 and stores nothing; an id already held is not stored (or sent) twice.
 */
export function registerTransactionsSource(app: FastifyInstance, outbox: Outbox, onEnqueued: () => void): void {
  app.post("/v1/transactions", async (request, reply): Promise<TransactionsAccepted> => {
    const body = parseRequest(TransactionsRequest, request.body);
    let inserted: number;
    try {
      inserted = outbox.enqueue(
        "billing",
        body.trace_transactions.map((t) => ({ recordId: t.id, body: JSON.stringify(t), attempts: t.num_failed_send_attempts })),
      );
    } catch (err) {
      if ((err as { code?: string }).code === "SQLITE_FULL") {
        throw new HttpError(507, "EGRESS_ERR_DISK_FULL", "the data dir is full; nothing of this batch was stored, retry later");
      }
      throw err;
    }
    onEnqueued();
    reply.code(202);
    const accepted = body.trace_transactions.length;
    return { accepted, duplicates: accepted - inserted };
  });
}
