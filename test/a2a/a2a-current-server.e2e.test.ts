import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import { TaskState, type ListTasksRequest, type Message, type StreamResponse, type Task } from "@a2a-js/sdk";
import { ClientFactory, type Client } from "@a2a-js/sdk/client";
import { asTask, userMessage } from "../helpers/a2a-v1-sdk.ts";
import { startService, tempDir, waitFor, type ServiceProcess } from "../helpers/processes.ts";

// A2A v1.0 as the platform's current agent server serves it (issue 31, section 4), on a real `a2a serve` process:
// ListTasks, SubscribeToTask from the task as it is now, the history scope, the version header, the extended card
// and the card's cache validators. Through the official 1.x client where it has the call; raw JSON-RPC where a
// client has no field for it (historyScope, headers).

const CONFIG = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;

let server: ServiceProcess;
let notes: Client;
let waiter: Client;

const client = (assistant: string) => new ClientFactory().createFromUrl(`${server.url}/a2a/${assistant}/.well-known/agent-card.json`, "");

before(async () => {
  server = await startService(
    ["a2a", "serve", "--config", CONFIG, "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-current-")],
    "agent server listening",
  );
  [notes, waiter] = await Promise.all([client("notes"), client("waiter")]);
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, `a clean stop; output:\n${server.output()}`);
});

const texts = (task: { history: Message[] }) =>
  task.history.map((m) => (m.parts[0]?.content?.$case === "text" ? m.parts[0].content.value : undefined));

async function rejectsWith(work: Promise<unknown>, code: number, message?: RegExp): Promise<void> {
  await assert.rejects(work, (err: unknown) => {
    type Raised = { envelopeCode?: number; cause?: Raised };
    assert.equal((err as Raised).envelopeCode ?? (err as Raised).cause?.envelopeCode, code, `code ${code}, not: ${String(err)}`);
    if (message) assert.match(String((err as Error).message), message);
    return true;
  });
}

/** One raw JSON-RPC call: the parsed answer (or, for a stream, its SSE events). */
async function rpc(assistant: string, method: string, params: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.url}/a2a/${assistant}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
  });
  return (await response.json()) as any;
}

/** A ListTasks request as the 1.x client's type has it: every field, the unset ones at their defaults. */
const listing = (fields: Partial<ListTasksRequest>): ListTasksRequest => ({
  tenant: "",
  contextId: "",
  status: TaskState.TASK_STATE_UNSPECIFIED,
  pageSize: undefined,
  pageToken: "",
  historyLength: undefined,
  statusTimestampAfter: undefined,
  includeArtifacts: undefined,
  ...fields,
});

/** A conversation of two turns in one context (v1.0): both completed tasks. */
async function twoTurns(first: string, second: string): Promise<[Task, Task]> {
  const one = asTask(await notes.sendMessage(userMessage(first)));
  const two = asTask(await notes.sendMessage(userMessage(second, { contextId: one.contextId })));
  return [one, two];
}

test("ListTasks: a context's tasks newest first, a page at a time, filtered by status; bad page sizes and tokens are -32602", async () => {
  const [one, two] = await twoTurns("a", "b");
  const three = asTask(await notes.sendMessage(userMessage("c", { contextId: one.contextId })));
  await notes.sendMessage(userMessage("elsewhere")); // another context of the same assistant

  const page1 = await notes.listTasks(listing({ contextId: one.contextId, pageSize: 2 }));
  assert.deepEqual(
    page1.tasks.map((t) => t.id),
    [three.id, two.id],
  );
  assert.deepEqual([page1.totalSize, page1.pageSize], [3, 2]);
  assert.notEqual(page1.nextPageToken, "", "a next page");
  const page2 = await notes.listTasks(listing({ contextId: one.contextId, pageSize: 2, pageToken: page1.nextPageToken }));
  assert.deepEqual([page2.tasks.map((t) => t.id), page2.nextPageToken, page2.totalSize], [[one.id], "", 3]);
  assert.ok(page1.tasks.every((t) => t.contextId === one.contextId && t.status?.state === TaskState.TASK_STATE_COMPLETED));
  assert.deepEqual(
    page1.tasks.map((t) => t.artifacts.length),
    [0, 0],
    "artifacts only with includeArtifacts",
  );
  const withArtifacts = await notes.listTasks(listing({ contextId: one.contextId, pageSize: 1, includeArtifacts: true }));
  assert.equal(withArtifacts.tasks[0]?.artifacts.length, 1);

  const completed = await notes.listTasks(listing({ contextId: one.contextId, status: TaskState.TASK_STATE_COMPLETED }));
  assert.equal(completed.tasks.length, 3);
  const running = await notes.listTasks(listing({ contextId: one.contextId, status: TaskState.TASK_STATE_WORKING }));
  assert.deepEqual([running.tasks.length, running.totalSize, running.pageSize], [0, 0, 50]);
  const otherAssistant = await waiter.listTasks(listing({ contextId: one.contextId }));
  assert.equal(otherAssistant.tasks.length, 0, "an assistant lists its own tasks only");

  await rejectsWith(notes.listTasks(listing({ pageSize: 101 })), -32602, /pageSize must be between 1 and 100/);
  await rejectsWith(notes.listTasks(listing({ pageToken: "not-a-token" })), -32602, /pageToken/);
  await rejectsWith(notes.listTasks(listing({ historyLength: 11 })), -32602, /historyLength cannot exceed 10/);
});

test("SubscribeToTask: first the task as GetTask shows it (working), then only the events that come after; none replayed", async () => {
  const started = asTask(await waiter.sendMessage({ ...userMessage("wait 1500"), configuration: nonBlocking }));
  await waitFor(
    async () => (await waiter.getTask({ tenant: "", id: started.id })).status?.state === TaskState.TASK_STATE_WORKING,
    5_000,
    "GetTask to show the run working",
  );
  const shown = await waiter.getTask({ tenant: "", id: started.id });
  const events: StreamResponse[] = [];
  for await (const event of waiter.resubscribeTask({ tenant: "", id: started.id })) events.push(event);

  const [first, ...rest] = events.map((e) => e.payload);
  assert.equal(first?.$case, "task", JSON.stringify(events));
  assert.equal(first.value.status?.state, TaskState.TASK_STATE_WORKING, "the task as it is now, not as it was submitted");
  assert.deepEqual(first.value.history, shown.history, "with the history GetTask shows");
  assert.deepEqual(
    rest.map((p) => (p?.$case === "statusUpdate" ? `${p.value.status?.state}:${p.value.status?.message ? "message" : "none"}` : p?.$case)),
    [`${TaskState.TASK_STATE_WORKING}:message`, "artifactUpdate", `${TaskState.TASK_STATE_COMPLETED}:message`],
    "only what happened after: the answer, its artifact, the end (no second task event, no replayed working update)",
  );
});

const nonBlocking = { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true };

test("history: the whole context's by default; historyScope task (configuration, params or header) gives the task's own; historyLength at most 10", async () => {
  const [one, two] = await twoTurns("remember this", "recall");
  const context = [
    "remember this",
    'Noted: "remember this". That is note 1 of this conversation.',
    "recall",
    'You told me: "remember this".',
  ];
  assert.deepEqual(texts(two), context, "SendMessage answers the context's history");
  assert.deepEqual(texts(await notes.getTask({ tenant: "", id: two.id })), context, "so does GetTask");
  assert.deepEqual(texts(await notes.getTask({ tenant: "", id: one.id })), context.slice(0, 2), "up to and including the task");
  assert.deepEqual(texts(await notes.getTask({ tenant: "", id: two.id, historyLength: 1 })), context.slice(3), "scope, then length");
  await rejectsWith(notes.getTask({ tenant: "", id: two.id, historyLength: 11 }), -32602, /historyLength cannot exceed 10/);

  const own = (task: any) => task.history.map((m: any) => m.parts[0].text);
  const got = await rpc("notes", "GetTask", { id: two.id, historyScope: "task" });
  assert.deepEqual(own(got.result), context.slice(2));
  const byHeader = await rpc("notes", "GetTask", { id: two.id }, { "LangGraph-A2A-History-Scope": "task" });
  assert.deepEqual(own(byHeader.result), context.slice(2));
  const paramWins = await rpc("notes", "GetTask", { id: two.id, historyScope: "context" }, { "LangGraph-A2A-History-Scope": "task" });
  assert.equal(paramWins.result.history.length, 4, "the request's value wins over the header");
  const listed = await rpc("notes", "ListTasks", { contextId: one.contextId, historyScope: "task" });
  assert.deepEqual(listed.result.tasks.map(own), [context.slice(2), context.slice(0, 2)]);

  const third = await rpc("notes", "SendMessage", {
    message: { role: "ROLE_USER", messageId: randomUUID(), parts: [{ text: "recall" }], contextId: one.contextId },
    configuration: { historyScope: "task" },
  });
  assert.deepEqual(own(third.result.task), ["recall", 'You told me: "remember this", "recall".']);
  const v03 = await rpc("notes", "tasks/get", { id: two.id });
  assert.equal(v03.result.history.length, 4, "v0.3 names answer the same history");

  const bad = await rpc("notes", "GetTask", { id: two.id, historyScope: "all" });
  assert.deepEqual(
    [bad.error.code, bad.error.message],
    [-32602, "Invalid params: historyScope must be 'context' or 'task' (params.historyScope)"],
  );
  const badHeader = await rpc("notes", "GetTask", { id: two.id }, { "LangGraph-A2A-History-Scope": "everything" });
  assert.equal(badHeader.error.code, -32602);
  const tooLong = await rpc("notes", "message/send", {
    message: { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text: "x" }] },
    configuration: { historyLength: 11 },
  });
  assert.equal(tooLong.error.code, -32602);
  assert.match(tooLong.error.message, /historyLength cannot exceed 10/);
});

test("A2A-Version: 1.0, 0.3 or none is served; another version is -32009, inside the stream for a streaming method", async () => {
  const send = (version?: string) =>
    rpc(
      "notes",
      "SendMessage",
      { message: { role: "ROLE_USER", messageId: randomUUID(), parts: [{ text: "v" }] } },
      version === undefined ? {} : { "A2A-Version": version },
    );
  for (const version of [undefined, "1.0", "0.3"]) assert.ok((await send(version)).result?.task, `A2A-Version ${version}`);
  const refused = await send("2.0");
  assert.equal(refused.error.code, -32009);
  assert.match(refused.error.message, /A2A-Version "2\.0"; this agent serves 1\.0 and 0\.3/);

  const stream = await fetch(`${server.url}/a2a/notes`, {
    method: "POST",
    headers: { "content-type": "application/json", "A2A-Version": "0.2" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "SendStreamingMessage", params: {} }),
  });
  assert.match(stream.headers.get("content-type")!, /^text\/event-stream/);
  const text = await stream.text();
  assert.match(text, /^event: error$/m);
  assert.equal(JSON.parse(/^data: (.*)$/m.exec(text)![1]!).error.code, -32009);
});

test("the agent card has an ETag and Cache-Control, answers 304 to If-None-Match, and advertises the history scope", async () => {
  const url = `${server.url}/.well-known/agent-card.json?assistant_id=notes`;
  const first = await fetch(url);
  const etag = first.headers.get("etag");
  assert.match(etag ?? "", /^"[\w-]+"$/);
  assert.match(first.headers.get("cache-control") ?? "", /max-age=\d+/);
  const card = (await first.json()) as any;
  assert.deepEqual(card.capabilities.extensions[0].params.header, "LangGraph-A2A-History-Scope");

  const again = await fetch(url, { headers: { "if-none-match": etag! } });
  assert.deepEqual([again.status, await again.text(), again.headers.get("etag")], [304, "", etag]);
  const stale = await fetch(url, { headers: { "if-none-match": '"an-old-tag"' } });
  assert.equal(stale.status, 200);
  const other = await fetch(`${server.url}/a2a/waiter/.well-known/agent-card.json`, { headers: { "if-none-match": etag! } });
  assert.equal(other.status, 200, "another assistant's card has another tag");
});
