import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import { Role, TaskState, type Message, type Part, type StreamResponse, type Task } from "@a2a-js/sdk";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from "@a2a-js/sdk/client";
import { asTask, userMessage } from "../helpers/a2a-v1-sdk.ts";
import { startService, tempDir, type ServiceProcess } from "../helpers/processes.ts";

// Our agent server (a real `egress-agent a2a serve` process) driven by the newest official A2A JS client,
// @a2a-js/sdk 1.x, with its defaults: it reads our card's supportedInterfaces, picks the JSON-RPC interface of
// protocol version 1.0 and speaks A2A v1.0 (SendMessage, GetTask, ...). A user who upgrades their SDK gets this client.

const CONFIG = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

let server: ServiceProcess;
let notes: Client;
/** The completed task of the first conversation turn (test 1), which test 3 reads back. */
let firstTurn: Task;

const client = (assistant: string) => new ClientFactory().createFromUrl(`${server.url}/a2a/${assistant}/.well-known/agent-card.json`, "");

before(async () => {
  server = await startService(
    ["a2a", "serve", "--config", CONFIG, "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-sdk-v1-")],
    "agent server listening",
  );
  // The per-assistant card as a full URL with an empty path, as in sdk-client.e2e.test.ts.
  notes = await client("notes");
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, `a clean stop; output:\n${server.output()}`);
});

const textOf = (message: Message | undefined): string | undefined => {
  const content = message?.parts[0]?.content;
  return content?.$case === "text" ? content.value : undefined;
};

const artifactText = (task: Task): string | undefined => {
  const content = task.artifacts[0]?.parts[0]?.content;
  return content?.$case === "text" ? content.value : undefined;
};

test("the v1 SDK with its defaults speaks A2A v1.0 to our card; a conversation of two messages completes, the second recalling the first", async () => {
  assert.deepEqual([notes.transport.protocolName, notes.protocolVersion], ["JSONRPC", "1.0"]);
  const card = await notes.getAgentCard();
  assert.equal(card.name, "notes");
  assert.deepEqual(
    card.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion]),
    [
      [`${server.url}/a2a/notes`, "JSONRPC", "1.0"],
      [`${server.url}/a2a/notes`, "JSONRPC", "0.3"],
    ],
  );

  const first = asTask(await notes.sendMessage(userMessage("buy milk")));
  const answer = 'Noted: "buy milk". That is note 1 of this conversation.';
  assert.equal(first.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.match(first.contextId, UUID);
  assert.equal(artifactText(first), answer);
  assert.equal(textOf(first.status?.message), answer);
  assert.equal(first.status?.message?.role, Role.ROLE_AGENT);
  firstTurn = first;

  const second = asTask(await notes.sendMessage(userMessage("recall", { contextId: first.contextId })));
  assert.equal(second.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(second.contextId, first.contextId, "the same conversation");
  assert.notEqual(second.id, first.id, "the next message of the conversation is a new task");
  assert.equal(artifactText(second), 'You told me: "buy milk".');
});

test("sendMessageStream yields the task, its updates and the artifact, ending with a completed status", async () => {
  const events: StreamResponse[] = [];
  for await (const event of notes.sendMessageStream(userMessage("stream this"))) events.push(event);

  const payloads = events.map((event) => event.payload);
  const first = payloads[0];
  assert.equal(first?.$case, "task", `the stream starts with the task: ${JSON.stringify(payloads)}`);
  const submitted = first.value;
  assert.match(submitted.contextId, UUID);

  const last = payloads.at(-1);
  assert.equal(last?.$case, "statusUpdate", `the stream ends with a status update: ${JSON.stringify(payloads.map((p) => p?.$case))}`);
  assert.equal(last.value.status?.state, TaskState.TASK_STATE_COMPLETED);
  const answer = 'Noted: "stream this". That is note 1 of this conversation.';
  assert.equal(textOf(last.value.status?.message), answer);

  const artifacts = payloads.filter((p) => p?.$case === "artifactUpdate");
  assert.equal(artifacts.length, 1);
  const [artifact] = artifacts.map((p) => p.value.artifact);
  assert.deepEqual(
    artifact?.parts.map((part) => part.content),
    [{ $case: "text", value: answer }],
  );
  for (const payload of payloads.slice(1)) {
    assert.ok(payload?.$case === "statusUpdate" || payload?.$case === "artifactUpdate", `an update: ${payload?.$case}`);
    assert.deepEqual(
      [payload.value.taskId, payload.value.contextId],
      [submitted.id, submitted.contextId],
      "every event names the task and its context",
    );
  }

  // What the stream ended with is what the server keeps.
  const stored = await notes.getTask({ tenant: "", id: submitted.id });
  assert.equal(stored.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(artifactText(stored), answer);
});

test("getTask returns the first turn's task with its history", async () => {
  assert.ok(firstTurn, "the conversation test ran first");
  const task = await notes.getTask({ tenant: "", id: firstTurn.id });
  assert.deepEqual([task.id, task.contextId, task.status?.state], [firstTurn.id, firstTurn.contextId, TaskState.TASK_STATE_COMPLETED]);
  assert.equal(artifactText(task), 'Noted: "buy milk". That is note 1 of this conversation.');
  assert.deepEqual(
    task.history.map((message) => [message.role, textOf(message)]),
    [
      [Role.ROLE_USER, "buy milk"],
      [Role.ROLE_AGENT, 'Noted: "buy milk". That is note 1 of this conversation.'],
    ],
  );

  const last = await notes.getTask({ tenant: "", id: firstTurn.id, historyLength: 1 });
  assert.deepEqual(
    last.history.map((message) => [message.role, textOf(message)]),
    [[Role.ROLE_AGENT, 'Noted: "buy milk". That is note 1 of this conversation.']],
  );
});

/** The JSON-RPC error code the 1.x SDK raised: on the error itself, or (inside a stream) on its cause. */
function codeOf(err: unknown): number | undefined {
  type Raised = { envelopeCode?: number; cause?: unknown };
  return (err as Raised).envelopeCode ?? ((err as Raised).cause as Raised | undefined)?.envelopeCode;
}

async function rejectsWith(work: Promise<unknown>, code: number, message?: RegExp): Promise<void> {
  await assert.rejects(work, (err: unknown) => {
    assert.equal(codeOf(err), code, `code ${code}, not: ${String(err)}`);
    if (message) assert.match(String((err as Error).message), message);
    return true;
  });
}

const drain = async (events: AsyncIterable<StreamResponse>) => {
  const seen: StreamResponse[] = [];
  for await (const event of events) seen.push(event);
  return seen;
};

const filePart = (content: Part["content"], mediaType: string, filename = ""): Part => ({
  content,
  metadata: undefined,
  filename,
  mediaType,
});

test("cancelTask cancels a running task; SubscribeToTask follows a running one to its end; unknown tasks are TaskNotFound", async () => {
  const waiter = await client("waiter");
  const started = asTask(await waiter.sendMessage({ ...userMessage("wait 20000"), configuration: nonBlocking }));
  assert.equal(started.status?.state, TaskState.TASK_STATE_SUBMITTED, "returnImmediately answers at once");
  const canceled = await waiter.cancelTask({ tenant: "", id: started.id, metadata: undefined });
  assert.deepEqual([canceled.id, canceled.status?.state], [started.id, TaskState.TASK_STATE_CANCELED]);
  await rejectsWith(waiter.cancelTask({ tenant: "", id: started.id, metadata: undefined }), -32002);
  await rejectsWith(waiter.getTask({ tenant: "", id: randomUUID() }), -32001);

  const running = asTask(await waiter.sendMessage({ ...userMessage("wait 300"), configuration: nonBlocking }));
  const followed = await drain(waiter.resubscribeTask({ tenant: "", id: running.id }));
  const last = followed.at(-1)?.payload;
  assert.equal(last?.$case, "statusUpdate");
  assert.equal(last.value.status?.state, TaskState.TASK_STATE_COMPLETED);
  // A task that ended has nothing left to follow (as the SDK's own DefaultRequestHandler answers).
  await rejectsWith(drain(waiter.resubscribeTask({ tenant: "", id: running.id })), -32004, /terminal state/);
  await rejectsWith(drain(waiter.resubscribeTask({ tenant: "", id: randomUUID() })), -32001);
});

const nonBlocking = { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true };

test("edges: errors found before a stream starts come inside it; a task that ended is not reopened", async () => {
  const noParts = userMessage("x");
  noParts.message!.parts = [];
  await rejectsWith(drain(notes.sendMessageStream(noParts)), -32602, /parts/);
  const done = asTask(await notes.sendMessage(userMessage("once")));
  const again = userMessage("again", { contextId: done.contextId, taskId: done.id });
  await rejectsWith(notes.sendMessage(again), -32004, /terminal state \(TASK_STATE_COMPLETED|terminal state \(completed/);
  await rejectsWith(drain(notes.sendMessageStream(again)), -32004);
});

test("edges: a conversation waiting for input takes only a reply naming its task, which resumes it", async () => {
  const approval = await client("approval");
  const asked = asTask(await approval.sendMessage(userMessage("pay 7 EUR")));
  assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
  await rejectsWith(approval.sendMessage(userMessage("yes", { contextId: asked.contextId })), -32602, /taskId is required/);
  const resumed = asTask(await approval.sendMessage(userMessage("yes", { contextId: asked.contextId, taskId: asked.id })));
  assert.deepEqual(
    [resumed.id, resumed.status?.state, artifactText(resumed)],
    [asked.id, TaskState.TASK_STATE_COMPLETED, "Done: pay 7 EUR"],
  );
  assert.deepEqual(
    resumed.history.map((message) => message.role),
    [Role.ROLE_USER, Role.ROLE_AGENT, Role.ROLE_USER, Role.ROLE_AGENT],
  );
});

test("edges: raw and url file parts reach the graph as LangChain content blocks; history holds every message the graph added", async () => {
  const echo = await client("echo-content");
  const request = userMessage("look");
  const bytes = Buffer.from("RIFF fake audio");
  request.message!.parts.push(
    filePart({ $case: "raw", value: bytes }, "audio/wav", "note.wav"),
    filePart({ $case: "url", value: "https://files.example/a.txt" }, "text/plain"),
  );
  const task = asTask(await echo.sendMessage(request));
  assert.deepEqual(JSON.parse(artifactText(task)!), [
    { type: "text", text: "look" },
    { type: "audio", mimeType: "audio/wav", data: bytes.toString("base64"), metadata: { filename: "note.wav" } },
    { type: "file", url: "https://files.example/a.txt", mimeType: "text/plain" },
  ]);

  const twoStep = await client("two-step");
  const stepped = asTask(await twoStep.sendMessage(userMessage("go")));
  assert.deepEqual(
    stepped.history.map((message) => [message.role, textOf(message)]),
    [
      [Role.ROLE_USER, "go"],
      [Role.ROLE_AGENT, "thinking..."],
      [Role.ROLE_AGENT, "done thinking"],
    ],
  );
});

test("edges: push notification methods are -32003; GetExtendedAgentCard is -32004 (the card declares none)", async () => {
  const done = asTask(await notes.sendMessage(userMessage("hook")));
  const transport = notes.transport;
  const config = { tenant: "", id: "", taskId: done.id, url: "http://127.0.0.1:1/hook", token: "", authentication: undefined };
  await rejectsWith(transport.createTaskPushNotificationConfig(config), -32003);
  await rejectsWith(transport.getTaskPushNotificationConfig({ tenant: "", taskId: done.id, id: "x" }), -32003);
  await rejectsWith(transport.listTaskPushNotificationConfig({ tenant: "", taskId: done.id, pageSize: 0, pageToken: "" }), -32003);
  await rejectsWith(transport.deleteTaskPushNotificationConfig({ tenant: "", taskId: done.id, id: "x" }), -32003);
  assert.equal((await notes.getAgentCard()).capabilities?.extendedAgentCard, false);
  await rejectsWith(transport.getExtendedAgentCard({ tenant: "" }), -32004, /no extended card/);
});

test("a client that switched on the SDK's v0.3 compatibility layer (for the server's earlier versions) keeps working, on v1.0", async () => {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
      transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
    }),
  );
  const compat = await factory.createFromUrl(`${server.url}/a2a/notes/.well-known/agent-card.json`, "");
  assert.deepEqual([compat.transport.protocolName, compat.protocolVersion], ["JSONRPC", "1.0"]);
  const task = asTask(await compat.sendMessage(userMessage("compat")));
  assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
});
