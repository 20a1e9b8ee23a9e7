import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test, type TestContext } from "node:test";
import pino from "pino";
import { A2aConversation } from "../../src/a2a/client.ts";
import { SidecarReporter } from "../../src/a2a/sidecar-reporter.ts";
import type { RunCount, TaskStore } from "../../src/a2a/task-store.ts";
import { getLocal } from "../../src/sidecar/commands/local-api-client.ts";
import { answersOk } from "../../src/controlplane/agent-process.ts";
import { ControlPlaneClient } from "../../src/controlplane/client.ts";
import { healthcheck } from "../../src/health-file.ts";
import { AnswerTooLargeError, readCappedText } from "../../src/http/capped-answer.ts";
import { AgentStatus } from "../../src/protocol/local-api.ts";
import { waitFor } from "../helpers/processes.ts";

// Every HTTP client of the product against a local server that answers without end: each stops reading at its
// cap, closes the connection (the server sees it go), and fails with an error naming the cap and the server's
// origin, never its path or credentials.

const CHUNK = Buffer.alloc(64 * 1024, "x");
const MiB = 1024 * 1024;

interface Flood {
  url: string;
  /** Bytes each answer got out before its connection closed. */
  cutAt: number[];
  requests: number;
}

/** A server whose every answer is `head` (status, type, prefix) and then x's without end, at the reader's pace. */
async function floodServer(t: TestContext, head: (request: IncomingMessage) => { status?: number; type: string; prefix: string }) {
  const flood: Flood = { url: "", cutAt: [], requests: 0 };
  const send = async (request: IncomingMessage, response: ServerResponse) => {
    flood.requests++;
    const { status = 200, type, prefix } = head(request);
    response.writeHead(status, { "content-type": type });
    let sent = 0;
    response.write(prefix);
    while (!response.destroyed) {
      sent += CHUNK.length;
      if (!response.write(CHUNK))
        await new Promise<void>((resolve) => {
          const done = () => {
            response.off("drain", done);
            response.off("close", done);
            resolve();
          };
          response.on("drain", done).on("close", done);
        });
    }
    flood.cutAt.push(sent);
  };
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => void send(request, response));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  flood.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  t.after(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return flood;
}

/** The answer was cut: the server saw the connection close after at most `max` bytes (the cap plus socket buffers). */
async function assertCut(flood: Flood, max: number, answers = 1): Promise<void> {
  await waitFor(() => flood.cutAt.length >= answers, 5_000, "the connection closed by the client");
  assert.ok(Math.max(...flood.cutAt) <= max, `each answer was cut early (${flood.cutAt.join(", ")} bytes)`);
}

const tooLarge = (cap: string, origin: string) => (err: unknown) => {
  assert.match((err as Error).message, new RegExp(`larger than ${cap}`));
  assert.match((err as Error).message, new RegExp(`from ${origin}[ :]`));
  return true;
};

test("readCappedText: an answer within the cap is read whole; a declared or streamed one past it is refused and its connection closed", async (t) => {
  const flood = await floodServer(t, () => ({ type: "text/plain", prefix: "" }));
  const response = await fetch(`${flood.url}/secret/path?key=s3cret`);
  await assert.rejects(readCappedText(response, 256 * 1024, `${flood.url}/secret/path?key=s3cret`), (err: unknown) => {
    assert.ok(err instanceof AnswerTooLargeError);
    assert.equal((err as AnswerTooLargeError).code, "EGRESS_ERR_ANSWER_TOO_LARGE");
    assert.doesNotMatch((err as Error).message, /secret|s3cret/, "neither the path nor the query is named");
    return tooLarge("256 KiB", flood.url)(err);
  });
  await assertCut(flood, 16 * MiB);

  const declared = createServer((_request, res) => res.writeHead(200, { "content-length": String(2 ** 30) }).write("x"));
  await new Promise<void>((resolve) => declared.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    declared.closeAllConnections();
    declared.close();
  });
  const url = `http://127.0.0.1:${(declared.address() as { port: number }).port}/`;
  await assert.rejects(readCappedText(await fetch(url), 1024, url), AnswerTooLargeError, "a declared 1 GiB is refused unread");

  const small = createServer((_request, res) => res.end("é".repeat(100)));
  await new Promise<void>((resolve) => small.listen(0, "127.0.0.1", resolve));
  t.after(() => small.close());
  const smallUrl = `http://127.0.0.1:${(small.address() as { port: number }).port}/`;
  assert.equal(await readCappedText(await fetch(smallUrl), 200, smallUrl), "é".repeat(100), "exactly at the cap: read whole");
});

test("the deployments client: an endless answer is a ControlPlaneError naming the 8 MiB cap, and its connection is closed", async (t) => {
  const flood = await floodServer(t, () => ({ type: "application/json", prefix: '{"resources":[' }));
  const client = new ControlPlaneClient({ baseUrl: flood.url, apiKey: "key-1" });
  await assert.rejects(client.list(), (err: unknown) => {
    assert.equal((err as { code?: string }).code, "EGRESS_ERR_CONTROL_PLANE");
    assert.match((err as Error).message, /^GET \/v2\/deployments: /);
    assert.doesNotMatch((err as Error).message, /key-1/);
    return tooLarge("8 MiB", flood.url)(err);
  });
  await assertCut(flood, 32 * MiB);
});

test("the A2A client: an endless answer to message/send, and an endless event in message/stream, each end in an error", async (t) => {
  const flood = await floodServer(t, (request) =>
    request.headers.accept === "text/event-stream"
      ? { type: "text/event-stream", prefix: 'data: {"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"' }
      : { type: "application/json", prefix: '{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"' },
  );
  const conversation = new A2aConversation({ baseUrl: flood.url, assistantId: "notes", maxAnswerBytes: MiB });
  await assert.rejects(conversation.send("hi"), tooLarge("1 MiB", flood.url));
  await assertCut(flood, 16 * MiB, 1);
  const reading = (async () => {
    for await (const _ of conversation.stream("hi")) assert.fail("no event is whole");
  })();
  await assert.rejects(reading, (err: unknown) => {
    assert.match((err as Error).message, /^one event of the stream from/);
    return tooLarge("1 MiB", flood.url)(err);
  });
  await assertCut(flood, 16 * MiB, 2);
});

test("the A2A client reads a stream longer than its cap when each event is within it", async (t) => {
  const event = `data: ${JSON.stringify({ jsonrpc: "2.0", id: 1, result: { kind: "status-update", taskId: "t", contextId: "c", status: { state: "working", timestamp: "2026-11-23T00:00:00Z" }, final: false, metadata: { pad: "x".repeat(4000) } } })}\n\n`;
  const server = createServer((request, response) => {
    request.resume();
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.end(`: keep-alive\n\n${event.repeat(100)}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const conversation = new A2aConversation({ baseUrl: url, assistantId: "notes", maxAnswerBytes: 64 * 1024 });
  let events = 0;
  for await (const _ of conversation.stream("hi")) events++;
  assert.equal(events, 100, "400 KB of stream in 4 KB events, each read");
});

test("the sidecar reporter: an endless answer from the sidecar leaves the runs unreported, for the next interval", async (t) => {
  const flood = await floodServer(t, () => ({ type: "application/json", prefix: '{"accepted":' }));
  const count: RunCount = {
    transactionId: "9b2f7d4e-1c3a-4e5f-8a6b-7c8d9e0f1a2b",
    sessionId: "3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7",
    intervalStart: 0,
    intervalEnd: 60_000,
    runs: 3,
    firstAt: 1_000,
    lastAt: 2_000,
  };
  const reported: string[] = [];
  const store = { closedCounts: async () => [count], reported: async (ids: readonly string[]) => void reported.push(...ids) };
  const warnings: { msg: string; reason?: string }[] = [];
  const logger = pino({ level: "warn" }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
  const reporter = new SidecarReporter({
    sidecarUrl: flood.url,
    store: store as unknown as TaskStore,
    intervalMs: 60_000,
    tenantId: "3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7",
    organizationId: "6f1c8a52-3b7e-4c55-9a51-0d2f4e6b7a10",
    logger,
    now: () => 120_000,
  });
  t.after(() => reporter.stop().catch(() => {}));
  await reporter.flush();
  await reporter.flush();
  assert.deepEqual(reported, [], "nothing counts as reported");
  assert.equal(flood.requests, 2, "each flush tried again");
  const failures = warnings.filter((w) => w.msg === "reporting runs to the sidecar failed; retrying next interval");
  assert.equal(failures.length, 2);
  assert.match(failures[0]!.reason!, /larger than 64 KiB/);
  await assertCut(flood, 16 * MiB, 2);
});

test("status and the control plane's health probe: endless answers end in a clear error, or unhealthy", async (t) => {
  const flood = await floodServer(t, () => ({ type: "application/json", prefix: '{"ok":' }));
  await assert.rejects(getLocal(flood.url, "/v1/status", AgentStatus), tooLarge("16 MiB", flood.url));
  assert.equal(await answersOk(flood.url, 5_000), false, "an endless /ok is not healthy");
  await assertCut(flood, 48 * MiB, 2);
});

test("the image's healthcheck: a 200 with an endless body is healthy, and the body is not read", async (t) => {
  const flood = await floodServer(t, () => ({ type: "application/json", prefix: "" }));
  const file = join(mkdtempSync(join(tmpdir(), "health-")), "health-url");
  writeFileSync(file, `${flood.url}/ok\n`);
  t.after(() => rmSync(dirname(file), { recursive: true, force: true }));
  assert.equal(await healthcheck({ EGRESS_HEALTH_FILE: file }, 5_000), 0);
  await assertCut(flood, 16 * MiB);
});
