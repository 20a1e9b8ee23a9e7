import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import { Role, TaskState, type Message, type SendMessageRequest, type StreamResponse, type Task } from "a2a-sdk-v1";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from "a2a-sdk-v1/client";
import { startService, tempDir, type ServiceProcess } from "../helpers/processes.ts";

// Our agent server (a real `egress-agent a2a serve` process, A2A v0.3.0) driven by the newest official A2A JS
// client, @a2a-js/sdk 1.x (A2A 1.0, installed as the alias `a2a-sdk-v1`), with its opt-in v0.3 compatibility
// layer switched on the way its compatibility guide (docs/compatibility-v0_3.md) says: on the card resolver and on
// the JSON-RPC transport factory. A user upgrading their SDK gets exactly this client.

const CONFIG = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

let server: ServiceProcess;
let notes: Client;
/** The completed task of the first conversation turn (test 1), which test 3 reads back. */
let firstTurn: Task;

before(async () => {
  server = await startService(
    ["a2a", "serve", "--config", CONFIG, "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-sdk-v1-")],
    "agent server listening",
  );
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
      transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
    }),
  );
  // The per-assistant card as a full URL with an empty path, as in sdk-client.e2e.test.ts.
  notes = await factory.createFromUrl(`${server.url}/a2a/notes/.well-known/agent-card.json`, "");
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, `a clean stop; output:\n${server.output()}`);
});

const userMessage = (text: string, ids: { contextId?: string; taskId?: string } = {}): SendMessageRequest => ({
  tenant: "",
  metadata: undefined,
  configuration: undefined,
  message: {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" }],
    contextId: ids.contextId ?? "",
    taskId: ids.taskId ?? "",
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  },
});

const asTask = (result: Task | Message): Task => {
  assert.ok("status" in result && "id" in result, `a task, not ${JSON.stringify(result)}`);
  return result;
};

const textOf = (message: Message | undefined): string | undefined => {
  const content = message?.parts[0]?.content;
  return content?.$case === "text" ? content.value : undefined;
};

const artifactText = (task: Task): string | undefined => {
  const content = task.artifacts[0]?.parts[0]?.content;
  return content?.$case === "text" ? content.value : undefined;
};

test("the v1 SDK (v0.3 compat) resolves our card and a conversation of two messages completes, the second recalling the first", async () => {
  // The resolver read our card as a v0.3 card, so the factory chose the v0.3 JSON-RPC transport (the SDK's
  // LegacyJsonRpcTransport; not `instanceof` the class exported by a2a-sdk-v1/compat/v0_3/client, which is a
  // second bundled copy of it).
  assert.deepEqual([notes.transport.protocolName, notes.protocolVersion], ["JSONRPC", "0.3"]);
  const card = await notes.getAgentCard();
  assert.equal(card.name, "notes");
  assert.deepEqual(
    card.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion]),
    [[`${server.url}/a2a/notes`, "JSONRPC", "0.3.0"]],
  );

  const first = asTask(await notes.sendMessage(userMessage("buy milk")));
  const answer = 'Noted: "buy milk". That is note 1 of this conversation.';
  assert.equal(first.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.match(first.contextId, UUID);
  assert.equal(artifactText(first), answer);
  assert.equal(textOf(first.status?.message), answer);
  assert.equal(first.status?.message?.role, Role.ROLE_AGENT);
  firstTurn = first;

  const second = asTask(await notes.sendMessage(userMessage("recall", { contextId: first.contextId, taskId: first.id })));
  assert.equal(second.status?.state, TaskState.TASK_STATE_COMPLETED);
  assert.equal(second.contextId, first.contextId, "the same conversation");
  assert.notEqual(second.id, first.id, "a completed task is not reopened: the message starts a new one");
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
