import assert from "node:assert/strict";
import { createServer } from "node:http";
import { test } from "node:test";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { A2aClientError, A2aConversation } from "../../src/a2a/client.ts";
import { graphInput, messageText, nodeOutputs } from "../../src/a2a/messages.ts";
import type { RpcError } from "../../src/a2a/rpc-error.ts";
import { attachThreadId, THREAD_ID_ATTRIBUTE } from "../../src/a2a/thread-id.ts";
import { Message } from "../../src/protocol/a2a.ts";

// The client's conversation rules against a stand-in server that records each request body (the real server is in
// the e2e tests), and the pieces that turn A2A messages into graph input.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function standIn(answer: (body: any, n: number) => { status?: number; body: unknown }) {
  const bodies: any[] = [];
  const server = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk) => (text += chunk));
    request.on("end", () => {
      const body = JSON.parse(text);
      bodies.push(body);
      const reply = answer(body, bodies.length);
      response.writeHead(reply.status ?? 200, { "content-type": "application/json" }).end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { url, bodies, close: () => new Promise((resolve) => server.close(resolve)) };
}

const task = (n: number) => ({
  kind: "task",
  id: `task-${n}`,
  contextId: "6c5d1a8e-0f0b-4c1e-9d5e-2a1b3c4d5e6f",
  status: { state: "completed", timestamp: "2026-11-23T00:00:00Z" },
  artifacts: [],
});

test("the first message has no contextId or taskId and a random thread id; each later one carries the contextId (as thread id too) and the taskId of the last answer (SEED-SPEC A2A rule 2)", async (t) => {
  const waiting = (n: number) => ({ ...task(n), status: { state: "input-required", timestamp: "2026-11-23T00:00:00Z" } });
  const server = await standIn((body, n) => ({ body: { jsonrpc: "2.0", id: body.id, result: n === 2 ? waiting(n) : task(n) } }));
  t.after(() => server.close());
  const conversation = new A2aConversation({ baseUrl: `${server.url}/`, assistantId: "notes" });
  await conversation.send("one");
  await conversation.send("two", { tone: "loud" });
  await conversation.send("yes");
  await conversation.send("four");
  const [first, second, third, fourth] = server.bodies;
  assert.deepEqual(
    [third.params.message.taskId, fourth.params.message.taskId],
    ["task-2", "task-3"],
    "the last answer's task, waiting or ended",
  );
  assert.equal(first.method, "message/send");
  assert.equal(first.params.message.contextId, undefined);
  assert.equal(first.params.message.taskId, undefined);
  assert.match(first.metadata.thread_id, UUID);
  assert.match(first.params.message.messageId, UUID);
  assert.deepEqual(
    [second.params.message.contextId, second.params.message.taskId],
    [task(1).contextId, "task-1"],
    "the completed task of the last answer is named too (the server opens a new task after it)",
  );
  assert.equal(second.metadata.thread_id, task(1).contextId);
  assert.deepEqual(second.params.message.parts, [
    { kind: "text", text: "two" },
    { kind: "data", data: { tone: "loud" } },
  ]);
  assert.notEqual(first.params.message.messageId, second.params.message.messageId);
});

test("a JSON-RPC error or a non-200 answer is an A2aClientError carrying the error", async (t) => {
  const server = await standIn((body, n) =>
    n === 1
      ? { body: { jsonrpc: "2.0", id: body.id, error: { code: -32001, message: "Task not found" } } }
      : { status: 503, body: { detail: "busy" } },
  );
  t.after(() => server.close());
  const conversation = new A2aConversation({ baseUrl: server.url, assistantId: "notes" });
  await assert.rejects(conversation.send("x"), (err: A2aClientError) => err instanceof A2aClientError && err.rpcError?.code === -32001);
  await assert.rejects(conversation.send("x"), /answered HTTP 503/);
  assert.equal(conversation.contextId, undefined, "a failed call does not move the conversation");
});

test("attachThreadId puts the body's metadata.thread_id on a span as platform.metadata.thread_id", async () => {
  const exporter = new InMemorySpanExporter();
  const tracer = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }).getTracer("other-agent");
  const span = tracer.startSpan("handle a2a request");
  assert.equal(attachThreadId(span, { jsonrpc: "2.0", metadata: { thread_id: "thread-7" } }), "thread-7");
  span.end();
  const none = tracer.startSpan("no metadata");
  assert.equal(attachThreadId(none, { jsonrpc: "2.0" }), undefined);
  none.end();
  const [withId, without] = exporter.getFinishedSpans();
  assert.equal(withId!.attributes[THREAD_ID_ATTRIBUTE], "thread-7");
  assert.equal(without!.attributes[THREAD_ID_ATTRIBUTE], undefined);
});

test("graph input: text parts become one human (or assistant) entry, data parts merge in, file parts make it content blocks", () => {
  const message = (parts: unknown[], role = "user") => Message.parse({ role, messageId: "m", parts });
  assert.deepEqual(
    graphInput(
      message([
        { kind: "text", text: "a" },
        { kind: "data", data: { tone: "loud" } },
        { kind: "text", text: "b" },
      ]),
    ),
    {
      tone: "loud",
      messages: [{ role: "human", content: "a\nb" }],
    },
  );
  assert.deepEqual(graphInput(message([{ kind: "text", text: "hi" }], "agent")).messages, [{ role: "assistant", content: "hi" }]);
  assert.deepEqual(
    graphInput(
      message([
        { kind: "file", file: { bytes: "aGk=", mimeType: "video/mp4" } },
        { kind: "file", file: { bytes: "aGk=" } },
        { kind: "text", text: "both?" },
      ]),
    ).messages,
    [
      {
        role: "human",
        content: [
          { type: "video", mimeType: "video/mp4", data: "aGk=" },
          { type: "file", mimeType: "application/octet-stream", data: "aGk=" },
          { type: "text", text: "both?" },
        ],
      },
    ],
  );
  for (const file of [{ uri: "x" }, { bytes: "a" }, { bytes: "aGk=", uri: "https://x.example/" }, {}]) {
    assert.throws(
      () => graphInput(message([{ kind: "file", file }])),
      (err: RpcError) => err.code === -32602,
      JSON.stringify(file),
    );
  }
  assert.equal(
    messageText({
      content: [
        { type: "text", text: "a" },
        { type: "image_url", image_url: "x" },
        { type: "text", text: "b" },
      ],
    }),
    "ab",
  );
});

test("a stream chunk's node outputs: returned messages (a list or one), none for a node that returned nothing, and interrupts", () => {
  const ai = { role: "assistant", content: "hi" };
  assert.deepEqual(nodeOutputs({ first: { messages: [ai, ai] }, second: { messages: ai }, quiet: {}, none: null }), {
    messages: [ai, ai, ai],
    interrupts: [],
  });
  assert.deepEqual(nodeOutputs({ __interrupt__: [{ id: "x", value: { question: "ok?" } }] }), {
    messages: [],
    interrupts: [{ question: "ok?" }],
  });
});
