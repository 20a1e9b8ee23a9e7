import pino from "pino";
import { defaultHttpLimits } from "../../src/http/limits.ts";
import { HttpServer } from "../../src/http/server.ts";
import { registerTransactionsSource } from "../../src/sidecar/sources/transactions.ts";
import type { BillingWriter } from "../../src/sidecar/storage/billing-writer.ts";
import type { DataDirSpace } from "../../src/sidecar/storage/disk-space.ts";
import { traceTransactions } from "./fixtures.ts";

const MiB = 2 ** 20;

/**
 * POSTs a batch of two transactions to POST /v1/transactions alone (its own server, no sidecar around it) on `writer`
 * and `space`: the answer, and how often the route woke the shipper (it does once a batch is stored).
 */
export async function postToTransactionsRoute(
  writer: BillingWriter,
  space: DataDirSpace,
): Promise<{ status: number; body: { code: string; detail: string }; retryAfter: string | null; woken: number }> {
  // The sidecar's billing route is charged to its billing budget, which its server has.
  const limits = { ...defaultHttpLimits, bodyBudgets: { billing: MiB } };
  const app = new HttpServer({ logger: pino({ level: "silent" }), bodyLimit: { bytes: MiB }, limits });
  let woken = 0;
  registerTransactionsSource(app, writer, () => woken++, space);
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  try {
    const response = await fetch(`${url}/v1/transactions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ trace_transactions: traceTransactions(2) }),
    });
    const body = (await response.json()) as { code: string; detail: string };
    return { status: response.status, body, retryAfter: response.headers.get("retry-after"), woken };
  } finally {
    await app.close();
  }
}
