import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { after, before, test } from "node:test";
import Database from "better-sqlite3";
import { startService, tempDir, waitFor, type ServiceProcess } from "../helpers/processes.ts";

// The protocol's edges on the wire, as bytes a client sees (the SDK tests read the same through the official
// clients): v0.3 and v1.0 on one endpoint, errors inside streams, notifications, the agent card.

const GRAPHS = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;

let server: ServiceProcess;
const dataDir = tempDir("a2a-edges-");
before(async () => {
  server = await startService(
    ["a2a", "serve", "--config", GRAPHS, "--listen", "127.0.0.1:0", "--data-dir", dataDir],
    "agent server listening",
  );
});
after(() => server.stop());

const post = (assistant: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}/a2a/${assistant}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

const v03Message = (text: string, extra: Record<string, unknown> = {}) => ({
  message: { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text }], ...extra },
});
const v1Message = (text: string, extra: Record<string, unknown> = {}) => ({
  message: { role: "ROLE_USER", messageId: randomUUID(), parts: [{ text }], ...extra },
});

/** Each SSE event of a response: its `event:` name (if any) and its parsed `data:`. */
async function sseEvents(response: Response): Promise<Array<{ event?: string; data: any }>> {
  return (await response.text())
    .split("\n\n")
    .filter((chunk) => chunk.trim() !== "")
    .map((chunk) => {
      const event = /^event: (.*)$/m.exec(chunk)?.[1];
      return { ...(event ? { event } : {}), data: JSON.parse(/^data: (.*)$/m.exec(chunk)![1]!) };
    });
}

test("v0.3: an error found before a stream starts is the stream's one event, `event: error`, echoing the id", async () => {
  const response = await post("notes", { jsonrpc: "2.0", id: "s-1", method: "message/stream", params: { message: { role: "user" } } });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type")!, /^text\/event-stream/);
  const events = await sseEvents(response);
  assert.equal(events.length, 1);
  assert.equal(events[0]!.event, "error");
  assert.deepEqual([events[0]!.data.jsonrpc, events[0]!.data.id, events[0]!.data.error.code], ["2.0", "s-1", -32602]);
  const resubscribe = await sseEvents(
    await post("notes", { jsonrpc: "2.0", id: 2, method: "tasks/resubscribe", params: { id: randomUUID() } }),
  );
  assert.deepEqual(
    resubscribe.map((e) => [e.event, e.data.id, e.data.error.code]),
    [["error", 2, -32001]],
  );
});

test("v1.0 on the same endpoint: method names, ProtoJSON shapes, enum names; a v1.0 stream's events and its errors", async () => {
  const sent = (await (await post("notes", { jsonrpc: "2.0", id: 1, method: "SendMessage", params: v1Message("v1 hello") })).json()) as any;
  const task = sent.result.task;
  assert.ok(task, `SendMessage answers {task}: ${JSON.stringify(sent)}`);
  assert.equal(task.status.state, "TASK_STATE_COMPLETED");
  assert.equal(task.status.message.role, "ROLE_AGENT");
  assert.deepEqual(task.artifacts[0].parts, [{ text: 'Noted: "v1 hello". That is note 1 of this conversation.' }]);
  assert.equal(task.kind, undefined, "no v0.3 `kind` in a v1.0 answer");

  const got = (await (
    await post("notes", { jsonrpc: "2.0", id: 2, method: "GetTask", params: { id: task.id, historyLength: 1 } })
  ).json()) as any;
  assert.deepEqual([got.result.id, got.result.history.length, got.result.history[0].role], [task.id, 1, "ROLE_AGENT"]);
  // The same task through v0.3: one store, two wires.
  const old = (await (await post("notes", { jsonrpc: "2.0", id: 3, method: "tasks/get", params: { id: task.id } })).json()) as any;
  assert.deepEqual([old.result.kind, old.result.status.state], ["task", "completed"]);

  const stream = await sseEvents(
    await post("two-step", { jsonrpc: "2.0", id: 4, method: "SendStreamingMessage", params: v1Message("go") }),
  );
  const payloads = stream.map((e) => Object.keys(e.data.result)[0]);
  assert.equal(payloads[0], "task");
  assert.equal(payloads.at(-1), "statusUpdate");
  assert.equal(stream.at(-1)!.data.result.statusUpdate.status.state, "TASK_STATE_COMPLETED");
  assert.ok(payloads.includes("artifactUpdate"));
  for (const e of stream) assert.equal(e.data.id, 4);

  const bad = await sseEvents(
    await post("notes", { jsonrpc: "2.0", id: 5, method: "SendStreamingMessage", params: { message: { role: "ROLE_USER" } } }),
  );
  assert.deepEqual(
    bad.map((e) => [e.event, e.data.id, e.data.error.code]),
    [["error", 5, -32602]],
  );
  assert.match(bad[0]!.data.error.message, /messageId/);
});

test("v1.0 errors carry v1.0's codes: invalid params, task not found, push notifications, a task that ended", async () => {
  const error = async (method: string, params: unknown) =>
    ((await (await post("notes", { jsonrpc: "2.0", id: 9, method, params })).json()) as any).error;
  const missing = await error("SendMessage", {});
  assert.equal(missing.code, -32602);
  assert.match(missing.message, /message/);
  assert.equal((await error("GetTask", { id: randomUUID() })).code, -32001);
  assert.equal((await error("CancelTask", { id: randomUUID() })).code, -32001);
  for (const method of [
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
  ])
    assert.equal((await error(method, { taskId: "t", id: "c" })).code, -32003, method);
  const extended = await error("GetExtendedAgentCard", {});
  assert.equal(extended.code, -32004, "the card declares no extended card: UnsupportedOperation, as v1.0 says");
  assert.match(extended.message, /capabilities\.extendedAgentCard is false/);
  const done = ((await (await post("notes", { jsonrpc: "2.0", id: 1, method: "SendMessage", params: v1Message("x") })).json()) as any)
    .result.task;
  const ended = await error("SendMessage", v1Message("y", { contextId: done.contextId, taskId: done.id }));
  assert.equal(ended.code, -32004, "A2A v1.0 answers UnsupportedOperation where v0.3 answered Invalid Request");
  assert.match(ended.message, /terminal state/);
});

test("a notification (no id) is carried out and never answered: 204 without a body, in both versions", async () => {
  const contextId = randomUUID();
  const sent = await post("notes", { jsonrpc: "2.0", method: "message/send", params: v03Message("told by notification", { contextId }) });
  assert.deepEqual([sent.status, await sent.text()], [204, ""]);
  const v1 = await post("notes", { jsonrpc: "2.0", method: "SendMessage", params: v1Message("and by a v1.0 one", { contextId }) });
  assert.deepEqual([v1.status, await v1.text()], [204, ""]);
  const invalid = await post("notes", { jsonrpc: "2.0", method: "message/send", params: {} });
  assert.deepEqual([invalid.status, await invalid.text()], [204, ""], "not even an error is answered");

  const recall = (await (
    await post("notes", { jsonrpc: "2.0", id: 1, method: "message/send", params: v03Message("recall", { contextId }) })
  ).json()) as any;
  assert.equal(recall.result.artifacts[0].parts[0].text, 'You told me: "told by notification", "and by a v1.0 one".');

  // A cancel sent as a notification cancels.
  const running = (
    (await (
      await post("waiter", {
        jsonrpc: "2.0",
        id: 2,
        method: "message/send",
        params: { ...v03Message("wait 20000"), configuration: { blocking: false } },
      })
    ).json()) as any
  ).result;
  const cancel = await post("waiter", { jsonrpc: "2.0", method: "tasks/cancel", params: { id: running.id } });
  assert.equal(cancel.status, 204);
  await waitFor(
    async () =>
      ((await (await post("waiter", { jsonrpc: "2.0", id: 3, method: "tasks/get", params: { id: running.id } })).json()) as any).result
        .status.state === "canceled",
    5_000,
    "the notified cancel to take effect",
  );
});

test("the agent card lists both versions on one JSON-RPC endpoint and keeps v0.3's fields", async () => {
  const card = (await (await fetch(`${server.url}/.well-known/agent-card.json?assistant_id=notes`)).json()) as any;
  const endpoint = `${server.url}/a2a/notes`;
  assert.deepEqual(card.supportedInterfaces, [
    { url: endpoint, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
    { url: endpoint, protocolBinding: "JSONRPC", protocolVersion: "0.3" },
  ]);
  assert.deepEqual([card.url, card.preferredTransport, card.protocolVersion], [endpoint, "JSONRPC", "0.3.0"]);
  assert.equal(card.capabilities.pushNotifications, false);
});

test("v1.0 requests refused for their params store nothing: no task, no conversation", async () => {
  const count = () => {
    const db = new Database(join(dataDir, "tasks.db"), { readonly: true, fileMustExist: true });
    try {
      return db.prepare("SELECT (SELECT count(*) FROM tasks) AS tasks, (SELECT count(*) FROM contexts) AS contexts").get();
    } finally {
      db.close();
    }
  };
  const done = ((await (await post("notes", { jsonrpc: "2.0", id: 1, method: "SendMessage", params: v1Message("seed") })).json()) as any)
    .result.task;
  const before = count();
  const refused: Array<[unknown, number]> = [
    [{}, -32602],
    [{ message: { role: "ROLE_USER", messageId: "m", parts: [] } }, -32602],
    [{ message: { role: "ROLE_UNSPECIFIED", messageId: "m", parts: [{ text: "x" }] } }, -32602],
    [{ message: { role: "ROLE_USER", messageId: "", parts: [{ text: "x" }] } }, -32602],
    [{ message: { role: "ROLE_USER", messageId: "m", parts: [{ raw: "", mediaType: "image/png" }, { url: "not a url" }] } }, -32602],
    [v1Message("x", { contextId: "not-a-uuid" }), -32602],
    [v1Message("x", { contextId: randomUUID(), taskId: done.id }), -32001],
    [v1Message("x", { contextId: done.contextId, taskId: done.id }), -32004],
    [{ ...v1Message("x"), configuration: { taskPushNotificationConfig: { url: "http://127.0.0.1:1/hook" } } }, -32003],
  ];
  for (const [params, code] of refused) {
    const answer = (await (await post("notes", { jsonrpc: "2.0", id: 7, method: "SendMessage", params })).json()) as any;
    assert.equal(answer.error?.code, code, JSON.stringify(params));
  }
  assert.deepEqual(count(), before);
});
