import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { text } from "node:stream/consumers";
import { test } from "node:test";
import pino from "pino";
import { SidecarReporter } from "../../src/a2a/sidecar-reporter.ts";
import type { RunCount, TaskStore } from "../../src/a2a/task-store.ts";
import { ORG_ID } from "../helpers/fixtures.ts";

test("a sidecar URL whose refusal echoes the report: the agent server logs the status and code, not the echo, and keeps the counts", async () => {
  const tenantId = randomUUID();
  const server = createServer(async (request, response) => {
    const echo = await text(request);
    response
      .writeHead(503, { "content-type": "application/json" })
      .end(JSON.stringify({ detail: `busy; you sent ${echo}\u001b[2J`, code: "EGRESS_ERR_BUSY" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const count: RunCount = {
    transactionId: randomUUID(),
    sessionId: randomUUID(),
    intervalStart: 0,
    intervalEnd: 60_000,
    runs: 3,
    firstAt: 1,
    lastAt: 2,
  };
  const reported: string[] = [];
  // Only the two calls the reporter makes; the task store's own behaviour is tested with the store.
  const store = {
    closedCounts: async () => [count],
    reported: async (ids: readonly string[]) => void reported.push(...ids),
  } as unknown as TaskStore;
  const lines: string[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(line) });
  const reporter = new SidecarReporter({
    sidecarUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    store,
    intervalMs: 60_000,
    tenantId,
    organizationId: ORG_ID,
    logger,
    now: () => 120_000,
  });
  try {
    await reporter.flush();
  } finally {
    await reporter.stop();
    server.close();
  }
  const log = lines.join("");
  assert.match(log, /"reason":"the sidecar answered 503 EGRESS_ERR_BUSY"/);
  assert.doesNotMatch(log, new RegExp(`${tenantId}|${count.sessionId}|you sent|\\\\u001b`));
  assert.deepEqual(reported, [], "a refused report stays in the store for the next interval");
});
