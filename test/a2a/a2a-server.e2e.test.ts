import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import Database from "better-sqlite3";
import { assistantUuid } from "../../src/a2a/graph-config.ts";
import { startService, tempDir, waitFor, type ServiceProcess } from "../helpers/processes.ts";

// The agent server as a user runs it: `egress-agent a2a serve` on the test graphs, spoken to over HTTP.

const GRAPHS = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** How many tasks the agent server of `dataDir` holds in its store (tasks.db), 0 before the file exists. */
function storedTasks(dataDir: string): number {
  const path = join(dataDir, "tasks.db");
  if (!existsSync(path)) return 0;
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM tasks").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

function serve(dataDir: string, config = GRAPHS): Promise<ServiceProcess> {
  return startService(["a2a", "serve", "--config", config, "--listen", "127.0.0.1:0", "--data-dir", dataDir], "agent server listening");
}

let server: ServiceProcess;
const dataDir = tempDir("a2a-");
before(async () => (server = await serve(dataDir)));
after(() => server.stop());

/** One JSON-RPC call; `body` replaces the whole request when given as a string. */
async function call(assistant: string, method: string, params?: unknown, extra: Record<string, unknown> = {}) {
  const response = await fetch(`${server.url}/a2a/${assistant}`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method, params, ...extra }),
  });
  return { status: response.status, body: (await response.json()) as any };
}

const message = (text: string, extra: Record<string, unknown> = {}) => ({
  message: { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text }], ...extra },
});

async function send(assistant: string, text: string, extra: Record<string, unknown> = {}, params: Record<string, unknown> = {}) {
  const answer = await call(assistant, "message/send", { ...message(text, extra), ...params });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(answer.body.error, undefined, JSON.stringify(answer.body.error));
  return answer.body.result;
}

async function rpcError(assistant: string, method: string, params?: unknown, extra?: Record<string, unknown>) {
  const answer = await call(assistant, method, params, extra);
  return { status: answer.status, ...answer.body.error };
}

test("message/send: the first message gets a new context and task; the answer is in the artifact and the status message", async () => {
  const task = await send("notes", "buy milk");
  assert.equal(task.kind, "task");
  assert.match(task.contextId, UUID);
  assert.match(task.id, UUID);
  assert.equal(task.status.state, "completed");
  const text = 'Noted: "buy milk". That is note 1 of this conversation.';
  assert.deepEqual(task.artifacts[0].parts, [{ kind: "text", text }]);
  assert.deepEqual([task.status.message.role, task.status.message.parts], ["agent", [{ kind: "text", text }]]);
  assert.deepEqual(
    task.history.map((m: any) => m.role),
    ["user", "agent"],
  );
});

test("a conversation continues as the platform's client sends it (contextId and the last answer's taskId), keeps its memory across a server restart, and old tasks stay readable", async () => {
  const first = await send("notes", "the door code is 4711");
  // SEED-SPEC A2A rule 2: the later message names the contextId and the taskId of the previous answer, a task that
  // has completed. With v0.3 method names that opens a new task in the context.
  const second = await send("notes", "the cat is called Ada", { contextId: first.contextId, taskId: first.id });
  assert.equal(second.contextId, first.contextId);
  assert.notEqual(second.id, first.id, "the next message of the conversation is a new task");
  assert.equal(second.status.state, "completed");
  assert.match(second.artifacts[0].parts[0].text, /note 2 of this conversation/);
  const old = await call("notes", "tasks/get", { id: first.id, historyScope: "task" });
  assert.deepEqual(
    [old.body.result.status.state, old.body.result.history.length],
    ["completed", 2],
    "the ended task itself is not reopened: it keeps its own two messages",
  );
  const elsewhere = await rpcError("notes", "message/send", message("x", { contextId: randomUUID(), taskId: first.id }));
  assert.equal(elsewhere.code, -32001, "a task of another context stays refused");

  await server.stop();
  server = await serve(dataDir);

  const third = await send("notes", "recall", { contextId: second.contextId });
  assert.equal(third.artifacts[0].parts[0].text, 'You told me: "the door code is 4711", "the cat is called Ada".');
  const restarted = await call("notes", "tasks/get", { id: first.id });
  assert.deepEqual([restarted.body.result.id, restarted.body.result.status.state], [first.id, "completed"]);
});

test("a new conversation is separate; a client-chosen UUID contextId starts one; data parts reach the graph's state", async () => {
  const a = await send("notes", "one");
  const b = await send("notes", "recall");
  assert.notEqual(b.contextId, a.contextId);
  assert.equal(b.artifacts[0].parts[0].text, "You have not told me anything yet.");
  const chosen = randomUUID();
  const c = await send("notes", "chosen", { contextId: chosen });
  assert.equal(c.contextId, chosen);
  const loud = await call("notes", "message/send", {
    message: {
      kind: "message",
      role: "user",
      messageId: randomUUID(),
      contextId: chosen,
      parts: [
        { kind: "text", text: "recall" },
        { kind: "data", data: { tone: "loud" } },
      ],
    },
  });
  assert.equal(loud.body.result.artifacts[0].parts[0].text, 'YOU TOLD ME: "CHOSEN".');
});

test("the assistant's UUID alias names the same assistant", async () => {
  const task = await send(assistantUuid("notes"), "by uuid");
  assert.match(task.artifacts[0].parts[0].text, /by uuid/);
  const again = await call("notes", "tasks/get", { id: task.id });
  assert.equal(again.body.result.id, task.id);
});

test("tasks/get: a task with its history, limited by historyLength; unknown and foreign tasks are -32001", async () => {
  const task = await send("notes", "remember me");
  const full = (await call("notes", "tasks/get", { id: task.id })).body.result;
  assert.equal(full.history.length, 2);
  assert.deepEqual(full.artifacts, task.artifacts);
  const one = (await call("notes", "tasks/get", { id: task.id, historyLength: 1 })).body.result;
  assert.deepEqual(
    one.history.map((m: any) => m.role),
    ["agent"],
  );
  assert.deepEqual((await call("notes", "tasks/get", { id: task.id, historyLength: 0 })).body.result.history, []);
  assert.equal((await rpcError("notes", "tasks/get", { id: randomUUID() })).code, -32001);
  assert.equal((await rpcError("waiter", "tasks/get", { id: task.id })).code, -32001, "another assistant's task is not found");
  assert.equal((await rpcError("notes", "tasks/get", { id: task.id, historyLength: -1 })).code, -32602);
});

test("tasks/cancel: a running task ends canceled; an ended one is -32002; its context takes new messages again", async () => {
  const running = await send("waiter", "wait 20000", {}, { configuration: { blocking: false } });
  assert.equal(running.status.state, "submitted");
  await waitFor(
    async () => (await call("waiter", "tasks/get", { id: running.id })).body.result.status.state === "working",
    5_000,
    "tasks/get to show the run working",
  );
  const busy = await rpcError("waiter", "message/send", message("wait 1", { contextId: running.contextId }));
  assert.equal(busy.code, -32004, "a context runs one task at a time");
  const started = Date.now();
  const canceled = await call("waiter", "tasks/cancel", { id: running.id });
  assert.equal(canceled.body.result.status.state, "canceled");
  assert.ok(Date.now() - started < 5_000, "the run stopped when canceled, not after its 20 s");
  assert.equal((await call("waiter", "tasks/get", { id: running.id })).body.result.status.state, "canceled");
  const again = await rpcError("waiter", "tasks/cancel", { id: running.id });
  assert.equal(again.code, -32002);
  const done = await send("waiter", "wait 1", { contextId: running.contextId, taskId: running.id });
  assert.notEqual(done.id, running.id, "the canceled task is not reopened: a new task runs in its context");
  assert.equal(done.artifacts[0].parts[0].text, "waited 1 ms");
  assert.equal((await rpcError("waiter", "tasks/cancel", { id: done.id })).code, -32002);
  assert.equal((await rpcError("waiter", "tasks/cancel", { id: randomUUID() })).code, -32001);
});

test("message/stream: Server-Sent Events in order, each a JSON-RPC response, ending with a final completed status", async () => {
  const id = randomUUID();
  const response = await fetch(`${server.url}/a2a/two-step`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "message/stream", params: message("go") }),
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type")!, /^text\/event-stream/);
  const events = (await response.text())
    .split("\n\n")
    .filter((chunk) => chunk.startsWith("data: "))
    .map((chunk) => JSON.parse(chunk.slice(6)));
  assert.ok(events.every((event) => event.jsonrpc === "2.0" && event.id === id));
  const results = events.map((event) => event.result);
  const summary = results.map(
    (r) =>
      `${r.kind}${r.status ? `:${r.status.state}` : ""}${r.status?.message ? `:${r.status.message.parts[0].text}` : ""}${r.final ? ":final" : ""}`,
  );
  assert.deepEqual(summary, [
    "task:submitted",
    "status-update:working",
    "status-update:working:thinking...",
    "status-update:working:done thinking",
    "artifact-update",
    "status-update:completed:done thinking:final",
  ]);
  assert.equal(results[4].artifact.parts[0].text, "done thinking");
  const stored = (await call("two-step", "tasks/get", { id: results[0].id })).body.result;
  assert.equal(stored.status.state, "completed");
});

test("a failing graph ends its task failed, without the graph's error text", async () => {
  const task = await send("failing", "hi");
  assert.equal(task.status.state, "failed");
  const text = task.status.message.parts[0].text;
  assert.match(text, /run failed \(TypeError\)/);
  assert.doesNotMatch(text, /secret sauce/);
});

test("JSON-RPC errors: parse, invalid request, method, params, content type, assistant", async () => {
  const raw = await fetch(`${server.url}/a2a/notes`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{not json",
  });
  assert.deepEqual([raw.status, ((await raw.json()) as any).error.code], [400, -32700]);

  const noVersion = await fetch(`${server.url}/a2a/notes`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ id: 1, method: "message/send" }),
  });
  const noVersionBody = (await noVersion.json()) as any;
  assert.deepEqual([noVersion.status, noVersionBody.id, noVersionBody.error.code], [200, 1, -32600]);
  assert.match(noVersionBody.error.message, /jsonrpc/);
  assert.equal((await rpcError("notes", "message/send", undefined, { jsonrpc: "1.0" })).code, -32600);

  const unknown = await rpcError("notes", "tasks/explode", {});
  assert.deepEqual([unknown.status, unknown.code], [200, -32601]);
  for (const verb of ["set", "get", "list", "delete"]) {
    assert.equal((await rpcError("notes", `tasks/pushNotificationConfig/${verb}`, { id: randomUUID() })).code, -32003, verb);
  }
  assert.equal((await rpcError("notes", "agent/getAuthenticatedExtendedCard", {})).code, -32007);

  const missing = await rpcError("notes", "message/send", {});
  assert.equal(missing.code, -32602);
  assert.deepEqual(missing.data[0].loc, ["params", "message"]);
  const badPart = await rpcError("notes", "message/send", { message: { role: "user", messageId: "m1", parts: [{ kind: "audio" }] } });
  assert.equal(badPart.code, -32602);
  assert.match(badPart.message, /params\.message\.parts\.0/);
  assert.equal((await rpcError("notes", "message/send", message("hi", { contextId: "not-a-uuid" }))).code, -32602);
  assert.equal(
    (await rpcError("notes", "message/send", message("hi", { taskId: randomUUID() }))).code,
    -32001,
    "a taskId this server never gave",
  );
  const other = await send("waiter", "wait 1");
  assert.equal((await rpcError("notes", "message/send", message("hi", { taskId: other.id }))).code, -32001, "another assistant's task");
  assert.equal(
    (await rpcError("notes", "message/send", message("hi", { contextId: other.contextId }))).code,
    -32602,
    "another assistant's context",
  );
  assert.equal(
    (
      await rpcError("notes", "message/send", {
        ...message("hi"),
        configuration: { pushNotificationConfig: { url: "http://127.0.0.1:1/hook" } },
      })
    ).code,
    -32003,
  );

  const fileParams = (file: unknown) => ({ message: { role: "user", messageId: randomUUID(), parts: [{ kind: "file", file }] } });
  const empty = await rpcError("notes", "message/send", fileParams({}));
  assert.deepEqual([empty.code, empty.data[0].loc], [-32602, ["params", "message", "parts", 0, "file"]]);
  assert.match(empty.message, /bytes \(base64\) or uri/);
  const notBase64 = await rpcError("notes", "message/send", fileParams({ bytes: "not base64!", mimeType: "image/png" }));
  assert.deepEqual([notBase64.code, notBase64.data[0].loc], [-32602, ["params", "message", "parts", 0, "file", "bytes"]]);
  assert.equal((await rpcError("notes", "message/send", fileParams({ uri: "no url" }))).code, -32602);
  const noMessages = await rpcError("no-messages", "message/send", message("hi"));
  assert.equal(noMessages.code, -32602);
  assert.match(noMessages.message, /messages/);

  const nobody = await rpcError("nobody", "message/send", message("hi"));
  assert.deepEqual([nobody.status, nobody.code], [404, -32001]);
});

test("refused requests store nothing: an invalid message leaves no task and no conversation behind", async () => {
  const contextId = randomUUID();
  assert.equal(
    (
      await rpcError("notes", "message/send", {
        message: { role: "user", messageId: randomUUID(), contextId, parts: [{ kind: "file", file: {} }] },
      })
    ).code,
    -32602,
  );
  const first = await send("notes", "recall", { contextId });
  assert.equal(first.artifacts[0].parts[0].text, "You have not told me anything yet.");
});

test("agent cards: per assistant, at both addresses, naming the A2A endpoint", async () => {
  const card = (await (await fetch(`${server.url}/.well-known/agent-card.json?assistant_id=notes`)).json()) as any;
  assert.equal(card.protocolVersion, "0.3.0");
  assert.equal(card.name, "notes");
  assert.match(card.description, /notes/i);
  assert.equal(card.url, `${server.url}/a2a/notes`);
  assert.deepEqual(
    { ...card.capabilities, extensions: card.capabilities.extensions.map((e: any) => e.uri) },
    {
      streaming: true,
      pushNotifications: false,
      stateTransitionHistory: false,
      extendedAgentCard: false,
      extensions: ["https://langchain.com/a2a/extensions/history-scope/v1"],
    },
  );
  assert.equal(card.preferredTransport, "JSONRPC");
  assert.ok(card.defaultInputModes.includes("text/plain") && card.defaultOutputModes.includes("text/plain"));
  assert.deepEqual(
    card.skills.map((s: any) => s.id),
    ["notes"],
  );
  assert.equal(typeof card.version, "string");
  const scoped = (await (await fetch(`${server.url}/a2a/waiter/.well-known/agent-card.json`)).json()) as any;
  assert.equal(scoped.url, `${server.url}/a2a/waiter`);
  const unknown = await fetch(`${server.url}/.well-known/agent-card.json?assistant_id=nobody`);
  assert.equal(unknown.status, 404);
  const missing = await fetch(`${server.url}/.well-known/agent-card.json`);
  assert.equal(missing.status, 422);
  assert.deepEqual(((await missing.json()) as any).detail[0].loc, ["query", "assistant_id"]);
});

test("http.disable_a2a: true removes the endpoint and the cards; the server still answers its health check", async () => {
  const dir = tempDir("a2a-off-");
  const config = join(dir, "graph.json");
  writeFileSync(
    config,
    JSON.stringify({
      graphs: { notes: `${new URL("../../examples/agent-server/notes-agent.ts", import.meta.url).pathname}:graph` },
      http: { disable_a2a: true },
    }),
  );
  const off = await serve(join(dir, "data"), config);
  try {
    const post = await fetch(`${off.url}/a2a/notes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: message("hi") }),
    });
    assert.equal(post.status, 404);
    assert.equal((await fetch(`${off.url}/.well-known/agent-card.json?assistant_id=notes`)).status, 404);
    assert.equal((await fetch(`${off.url}/a2a/notes/.well-known/agent-card.json`)).status, 404);
    assert.deepEqual(await (await fetch(`${off.url}/ok`)).json(), { ok: true });
  } finally {
    await off.stop();
  }
});

test("kill -9 during a run: after a restart the task reads failed and its conversation takes new messages", async () => {
  const dir = tempDir("a2a-kill-");
  const first = await serve(dir);
  const post = (url: string, method: string, params: unknown) =>
    fetch(`${url}/a2a/waiter`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    }).then(async (r) => ((await r.json()) as any).result);
  const earlier = await post(first.url, "message/send", message("wait 1"));
  const running = await post(first.url, "message/send", {
    ...message("wait 30000", { contextId: earlier.contextId }),
    configuration: { blocking: false },
  });
  assert.equal(await first.stop("SIGKILL"), null);
  const second = await serve(dir);
  try {
    const after = await post(second.url, "tasks/get", { id: running.id });
    assert.equal(after.status.state, "failed");
    assert.match(after.status.message.parts[0].text, /stopped while this task ran/);
    assert.equal((await post(second.url, "tasks/get", { id: earlier.id })).status.state, "completed");
    const next = await post(second.url, "message/send", message("wait 2", { contextId: running.contextId }));
    assert.deepEqual([next.contextId, next.status.state, next.artifacts[0].parts[0].text], [running.contextId, "completed", "waited 2 ms"]);
  } finally {
    await second.stop();
  }
});

test("SIGTERM lets a short running task finish before the server exits", async () => {
  const dir = tempDir("a2a-term-");
  const first = await serve(dir);
  const pending = fetch(`${first.url}/a2a/waiter`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: message("wait 1500") }),
  }).then((response) => response.json() as Promise<any>);
  await waitFor(() => storedTasks(dir), 10_000, "the task in the server's store: the request has arrived");
  const exit = first.stop("SIGTERM");
  const answer = await pending;
  assert.equal(answer.result.status.state, "completed", "the request in flight got its answer");
  assert.equal(answer.result.artifacts[0].parts[0].text, "waited 1500 ms");
  assert.equal(await exit, 0);
});

/** The `result` of each event of an SSE answer. */
async function streamResults(response: Response): Promise<any[]> {
  return (await response.text())
    .split("\n\n")
    .filter((chunk) => chunk.startsWith("data: "))
    .map((chunk) => JSON.parse(chunk.slice(6)).result);
}

test("a stream's client that goes away does not stop the run; tasks/resubscribe picks it up, and gives an ended task as it ended", async () => {
  const abort = new AbortController();
  const response = await fetch(`${server.url}/a2a/waiter`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/stream", params: message("wait 700") }),
    signal: abort.signal,
  });
  const reader = response.body!.getReader();
  const first = new TextDecoder().decode((await reader.read()).value);
  const task = JSON.parse(first.split("\n\n")[0]!.slice(6)).result;
  assert.equal(task.status.state, "submitted");
  abort.abort();

  const resubscribed = await fetch(`${server.url}/a2a/waiter`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tasks/resubscribe", params: { id: task.id } }),
  });
  const events = await streamResults(resubscribed);
  const last = events.at(-1);
  assert.deepEqual([last.kind, last.status.state, last.final], ["status-update", "completed", true]);
  assert.equal(events.find((e) => e.kind === "artifact-update").artifact.parts[0].text, "waited 700 ms");

  const ended = await fetch(`${server.url}/a2a/waiter`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tasks/resubscribe", params: { id: task.id } }),
  });
  const [only, ...rest] = await streamResults(ended);
  assert.deepEqual([only.kind, only.id, only.status.state, rest.length], ["task", task.id, "completed", 0]);
});

test("a graph that asks (LangGraph interrupt) leaves its task input-required; the next message with the taskId resumes it, across a restart", async () => {
  const asked = await send("approval", "pay 100 EUR");
  assert.equal(asked.status.state, "input-required");
  assert.deepEqual(asked.status.message.parts, [
    { kind: "text", text: JSON.stringify({ question: 'Approve "pay 100 EUR"? (yes/no)', request: "pay 100 EUR" }) },
    { kind: "data", data: { question: 'Approve "pay 100 EUR"? (yes/no)', request: "pay 100 EUR" } },
  ]);
  assert.deepEqual(asked.artifacts, []);

  await server.stop();
  server = await serve(dataDir);

  const resumed = await send("approval", "yes", { contextId: asked.contextId, taskId: asked.id });
  assert.equal(resumed.id, asked.id, "the same task goes on");
  assert.equal(resumed.status.state, "completed");
  assert.equal(resumed.artifacts[0].parts[0].text, "Done: pay 100 EUR");
  assert.deepEqual(
    resumed.history.map((m: any) => m.role),
    ["user", "agent", "user", "agent"],
  );

  const other = await send("approval", "delete everything");
  assert.equal(other.status.state, "input-required");
  const canceled = await call("approval", "tasks/cancel", { id: other.id });
  assert.equal(canceled.body.result.status.state, "canceled", "a waiting task can be canceled");
  const after = await send("approval", "no", { contextId: other.contextId, taskId: other.id });
  assert.notEqual(after.id, other.id, "a canceled task is not resumed: the message starts a new task");
  assert.equal(after.status.state, "input-required", "the new task's graph asks again");
  const stale = await rpcError("approval", "message/send", message("yes", { contextId: other.contextId, taskId: other.id }));
  assert.equal(stale.code, -32602, "naming the ended task while another waits for input is refused");
  assert.match(stale.message, new RegExp(`message.taskId must name task ${after.id}`));
});
