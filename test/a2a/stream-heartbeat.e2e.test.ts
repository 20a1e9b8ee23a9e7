import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import { Role, TaskState, type StreamResponse } from "@a2a-js/sdk";
import { ClientFactory as V1ClientFactory } from "@a2a-js/sdk/client";
import type { TaskStatusUpdateEvent } from "a2a-sdk-v03";
import { ClientFactory } from "a2a-sdk-v03/client";
import { A2aConversation } from "../../src/a2a/client.ts";
import { startService, tempDir, type ServiceProcess } from "../helpers/processes.ts";

// A quiet message/stream (a graph that thinks for a while) on a real agent server started with a short
// --stream-heartbeat: the wire carries `: keep-alive` comments, so idle proxies see traffic, and every client we
// know (the SDK for A2A v0.3, the SDK for v1.0, ours) reads the stream as if they were not there.

const CONFIG = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;
let server: ServiceProcess;

before(async () => {
  server = await startService(
    ["a2a", "serve", "--config", CONFIG, "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-heartbeat-"), "--stream-heartbeat", "100ms"],
    "agent server listening",
  );
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, `a clean stop; output:\n${server.output()}`);
});

const rpc = (method: string, text: string) => ({
  jsonrpc: "2.0",
  id: 1,
  method,
  params: { message: { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text }] } },
});

test("a quiet stream carries a heartbeat comment every interval, between its events", async () => {
  const response = await fetch(`${server.url}/a2a/waiter`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(rpc("message/stream", "wait 700")),
  });
  assert.equal(response.headers.get("content-type"), "text/event-stream");
  const text = await response.text();
  const heartbeats = text.split("\n\n").filter((block) => block === ": keep-alive").length;
  assert.ok(heartbeats >= 4, `at least four heartbeats in 700 ms of quiet (${heartbeats})`);
  const events = text
    .split("\n\n")
    .filter((block) => block.startsWith("data: "))
    .map((block) => JSON.parse(block.slice(6)).result);
  assert.deepEqual([events.at(-1).kind, events.at(-1).status.state, events.at(-1).final], ["status-update", "completed", true]);
});

test("the A2A SDK (v0.3) reads a stream with heartbeats as events only", async () => {
  const waiter = await new ClientFactory().createFromUrl(`${server.url}/a2a/waiter/.well-known/agent-card.json`, "");
  const kinds: string[] = [];
  let last: TaskStatusUpdateEvent | undefined;
  for await (const event of waiter.sendMessageStream({
    message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "wait 500" }] },
  })) {
    kinds.push(event.kind);
    if (event.kind === "status-update") last = event;
  }
  assert.equal(kinds[0], "task");
  assert.deepEqual([last?.status.state, last?.final], ["completed", true]);
  assert.ok(
    kinds.every((kind) => ["task", "status-update", "artifact-update"].includes(kind)),
    kinds.join(","),
  );
});

test("the A2A SDK (v1.0) and our own client read it the same", async () => {
  const waiter = await new V1ClientFactory().createFromUrl(`${server.url}/a2a/waiter/.well-known/agent-card.json`, "");
  const payloads: StreamResponse["payload"][] = [];
  for await (const event of waiter.sendMessageStream({
    tenant: "",
    metadata: undefined,
    configuration: undefined,
    message: {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      parts: [{ content: { $case: "text", value: "wait 500" }, metadata: undefined, filename: "", mediaType: "text/plain" }],
      contextId: "",
      taskId: "",
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
  }))
    payloads.push(event.payload);
  const last = payloads.at(-1);
  assert.equal(last?.$case, "statusUpdate");
  assert.equal(last.value.status?.state, TaskState.TASK_STATE_COMPLETED);

  const conversation = new A2aConversation({ baseUrl: server.url, assistantId: "waiter" });
  const events = [];
  for await (const event of conversation.stream("wait 500")) events.push(event);
  assert.deepEqual([events.at(-1)?.kind, (events.at(-1) as { status?: { state?: string } }).status?.state], ["status-update", "completed"]);
});
