import { randomUUID } from "node:crypto";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { BeaconClient, type SentRequest } from "../../src/sidecar/egress/beacon-client.ts";
import { classifyError } from "../../src/sidecar/shippers/delivery.ts";
import { AnswerTooLargeError } from "../../src/http/capped-answer.ts";

// The beacon client's 1 MiB cap against a local server: the beacon's own largest answer (a 422) is read whole, so a
// refused batch is still split; an answer past the cap is a failed attempt the audit log and the retry loop see.

test("a 422 of 200 KiB is read whole; a 2 MiB 200 is cut at 1 MiB, audited as failed and classified as a retry", async (t) => {
  const detail = Array.from({ length: 100 }, (_, i) => ({
    loc: ["body", "trace_transactions", i, "id"],
    msg: "x".repeat(2000),
    type: "uuid",
  }));
  const server = createServer((request, response) => {
    request.resume();
    if (request.url === "/v1/beacon/ingest-traces") {
      response.writeHead(422, { "content-type": "application/json" }).end(JSON.stringify({ detail }));
    } else {
      response.writeHead(200, { "content-type": "application/json" }).end(`{"token":"${"x".repeat(2 * 1024 * 1024)}"}`);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  const baseUrl = `http://user:pass@127.0.0.1:${(server.address() as { port: number }).port}`;
  const client = new BeaconClient({ baseUrl, timeoutMs: 5_000, instanceId: randomUUID() });
  t.after(() => client.close());
  const sent: SentRequest[] = [];
  client.listeners.push((request) => sent.push(request));

  const refused = await client.post("/v1/beacon/ingest-traces", "{}", { audit: { stream: "billing", records: 1 } });
  assert.equal(refused.status, 422);
  assert.equal((refused.body as { detail: unknown[] }).detail.length, 100, "the whole 422 was read");

  const error = await client
    .post("/v1/beacon/verify", '{"license":"lic-secret"}', { audit: { stream: "license", records: 1 } })
    .catch((err: unknown) => err);
  assert.ok(error instanceof AnswerTooLargeError);
  assert.match(error.message, /^the answer from http:\/\/127\.0\.0\.1:\d+ is larger than 1 MiB/);
  assert.doesNotMatch(error.message, /user|pass|verify|lic-secret/, "no credentials, path or key in the message");
  assert.deepEqual([sent[1]?.status, sent[1]?.error], [200, error.message], "the audit log has the status and why it failed");
  assert.deepEqual(classifyError(error), { kind: "retry", reason: error.message });
});
