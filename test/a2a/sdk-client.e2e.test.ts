import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import type { Message, MessageSendParams, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from "a2a-sdk-v03";
import { A2AClient, ClientFactory, TaskNotCancelableError, TaskNotFoundError, type Client } from "a2a-sdk-v03/client";
import { startService, tempDir, type ServiceProcess } from "../helpers/processes.ts";

// Our agent server (a real `egress-agent a2a serve` process) driven by the official A2A JS client, as a user of
// the SDK would: whatever the SDK cannot read, a user's agent cannot either.

const CONFIG = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

let server: ServiceProcess;
let notes: Client;
let waiter: Client;
/** The completed task of the first conversation turn (test 1), which test 3 reads back. */
let firstTurn: Task;

before(async () => {
  server = await startService(
    ["a2a", "serve", "--config", CONFIG, "--listen", "127.0.0.1:0", "--data-dir", tempDir("a2a-sdk-")],
    "agent server listening",
  );
  const factory = new ClientFactory();
  // The per-assistant card, as a full URL (an empty path: the SDK resolves its default relative path against the
  // base URL, which would drop the last segment of `/a2a/notes`).
  notes = await factory.createFromUrl(`${server.url}/a2a/notes/.well-known/agent-card.json`, "");
  // The root card, named by its query parameter.
  waiter = await factory.createFromUrl(`${server.url}/.well-known/agent-card.json?assistant_id=waiter`, "");
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, `a clean stop; output:\n${server.output()}`);
});

const userMessage = (text: string, ids: { contextId?: string; taskId?: string } = {}): MessageSendParams["message"] => ({
  kind: "message",
  messageId: randomUUID(),
  role: "user",
  parts: [{ kind: "text", text }],
  ...ids,
});

const asTask = (result: Task | Message): Task => {
  assert.equal(result.kind, "task", `a task, not ${JSON.stringify(result)}`);
  return result as Task;
};

const textOf = (message: Message | undefined): string | undefined => {
  const part = message?.parts[0];
  return part?.kind === "text" ? part.text : undefined;
};

const artifactText = (task: Task): string | undefined => {
  const part = task.artifacts?.[0]?.parts[0];
  return part?.kind === "text" ? part.text : undefined;
};

test("the SDK resolves the agent card and a conversation of two messages completes, the second continuing the first", async () => {
  const card = await notes.getAgentCard();
  assert.equal(card.name, "notes");
  assert.equal(card.protocolVersion, "0.3.0");
  assert.equal(card.url, `${server.url}/a2a/notes`);
  assert.equal(card.capabilities.streaming, true);
  // The same card through A2AClient.fromCardUrl, the SDK's other entry point.
  const legacy = await A2AClient.fromCardUrl(`${server.url}/.well-known/agent-card.json?assistant_id=notes`);
  assert.equal((await legacy.getAgentCard()).url, `${server.url}/a2a/notes`);

  const first = asTask(await notes.sendMessage({ message: userMessage("buy milk") }));
  const answer = 'Noted: "buy milk". That is note 1 of this conversation.';
  assert.equal(first.status.state, "completed");
  assert.match(first.contextId, UUID);
  assert.equal(artifactText(first), answer);
  assert.equal(textOf(first.status.message), answer);
  assert.equal(first.status.message?.role, "agent");
  firstTurn = first;

  const second = asTask(await notes.sendMessage({ message: userMessage("recall", { contextId: first.contextId }) }));
  assert.equal(second.status.state, "completed");
  assert.equal(second.contextId, first.contextId, "the same conversation");
  assert.notEqual(second.id, first.id, "the next message of the conversation is a new task");
  assert.equal(artifactText(second), 'You told me: "buy milk".');
});

test("sendMessageStream yields the submitted task, working updates, the artifact and a final completed update, in order", async () => {
  const events: Array<Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent> = [];
  for await (const event of notes.sendMessageStream({ message: userMessage("stream this") })) events.push(event);

  const steps = events.map((event) =>
    event.kind === "status-update" ? `status-update:${event.status.state}${event.final ? ":final" : ""}` : event.kind,
  );
  assert.equal(steps[0], "task");
  assert.equal(steps[1], "status-update:working");
  assert.equal(steps.at(-2), "artifact-update");
  assert.equal(steps.at(-1), "status-update:completed:final");
  for (const step of steps.slice(2, -2))
    assert.equal(step, "status-update:working", `between the first working update and the artifact: ${steps.join(", ")}`);

  const submitted = events[0] as Task;
  assert.equal(submitted.status.state, "submitted");
  assert.match(submitted.contextId, UUID);
  for (const event of events.slice(1)) {
    const ids = event as TaskStatusUpdateEvent | TaskArtifactUpdateEvent;
    assert.deepEqual([ids.taskId, ids.contextId], [submitted.id, submitted.contextId], "every event names the task and its context");
  }
  const artifact = (events.at(-2) as TaskArtifactUpdateEvent).artifact;
  const answer = 'Noted: "stream this". That is note 1 of this conversation.';
  assert.deepEqual(artifact.parts, [{ kind: "text", text: answer }]);
  assert.equal(textOf((events.at(-1) as TaskStatusUpdateEvent).status.message), answer);

  // What the stream ended with is what the server keeps.
  const stored = await notes.getTask({ id: submitted.id });
  assert.equal(stored.status.state, "completed");
  assert.equal(artifactText(stored), answer);
});

test("getTask returns the task with its history, and historyLength limits it", async () => {
  assert.ok(firstTurn, "the conversation test ran first");
  const task = await notes.getTask({ id: firstTurn.id });
  assert.equal(task.kind, "task");
  assert.deepEqual([task.id, task.contextId, task.status.state], [firstTurn.id, firstTurn.contextId, "completed"]);
  assert.equal(artifactText(task), artifactText(firstTurn));
  assert.deepEqual(
    task.history?.map((message) => [message.role, textOf(message)]),
    [
      ["user", "buy milk"],
      ["agent", 'Noted: "buy milk". That is note 1 of this conversation.'],
    ],
  );

  const last = await notes.getTask({ id: firstTurn.id, historyLength: 1 });
  assert.deepEqual(
    last.history?.map((message) => [message.role, textOf(message)]),
    [["agent", 'Noted: "buy milk". That is note 1 of this conversation.']],
  );
  const none = await notes.getTask({ id: firstTurn.id, historyLength: 0 });
  assert.deepEqual(none.history, []);
});

test("cancelTask cancels a running task; an unknown task id is an error the SDK raises", async () => {
  const started = asTask(await waiter.sendMessage({ message: userMessage("wait 20000"), configuration: { blocking: false } }));
  assert.equal(started.status.state, "submitted", "a non-blocking send answers at once");

  const t0 = performance.now();
  const canceled = await waiter.cancelTask({ id: started.id });
  assert.ok(performance.now() - t0 < 5_000, "cancel does not wait for the 20 s run");
  assert.equal(canceled.kind, "task");
  assert.equal(canceled.id, started.id);
  assert.equal(canceled.status.state, "canceled");
  assert.equal(textOf(canceled.status.message), "The task was canceled.");
  assert.equal((await waiter.getTask({ id: started.id })).status.state, "canceled");

  // A canceled task is not cancelable again (-32002).
  await assert.rejects(waiter.cancelTask({ id: started.id }), TaskNotCancelableError);

  const unknown = randomUUID();
  await assert.rejects(waiter.getTask({ id: unknown }), (err: unknown) => {
    assert.ok(err instanceof TaskNotFoundError, `a TaskNotFoundError, not ${String(err)}`);
    const response = (err as TaskNotFoundError & { errorResponse?: { error: { code: number; message: string } } }).errorResponse;
    assert.equal(response?.error.code, -32001);
    assert.match(response?.error.message ?? "", new RegExp(unknown));
    return true;
  });
  // Another assistant's task is not found either.
  if (firstTurn) await assert.rejects(waiter.getTask({ id: firstTurn.id }), TaskNotFoundError);
});

/** The JSON-RPC error code the 0.3 SDK raised: on the error itself, or (inside a stream) on its cause. */
function codeOf(err: unknown): number | undefined {
  type Raised = { errorResponse?: { error?: { code?: number } }; cause?: unknown };
  const raised = err as Raised;
  return raised.errorResponse?.error?.code ?? (raised.cause as Raised | undefined)?.errorResponse?.error?.code;
}

async function rejectsWith(work: Promise<unknown> | (() => Promise<unknown>), code: number, message?: RegExp): Promise<void> {
  await assert.rejects(work, (err: unknown) => {
    assert.equal(codeOf(err), code, `code ${code}, not: ${String(err)}`);
    if (message) assert.match(String((err as Error).message), message);
    return true;
  });
}

const drain = async (events: AsyncIterable<unknown>) => {
  const seen: unknown[] = [];
  for await (const event of events) seen.push(event);
  return seen;
};

const client = (assistant: string) => new ClientFactory().createFromUrl(`${server.url}/a2a/${assistant}/.well-known/agent-card.json`, "");

test("edges: errors found before a stream starts come inside it, where the SDK reads their code", async () => {
  // An invalid message (no parts), an unknown task to resubscribe to: each a stream whose one event is the error.
  await rejectsWith(drain(notes.sendMessageStream({ message: { ...userMessage("x"), parts: [] } })), -32602, /parts/);
  await rejectsWith(drain(notes.resubscribeTask({ id: randomUUID() })), -32001);
});

test("edges: a message naming a task that ended opens a new task in its context; a conversation waiting for input takes only a reply naming its task", async () => {
  const done = asTask(await notes.sendMessage({ message: userMessage("first") }));
  const more = asTask(await notes.sendMessage({ message: userMessage("more", { contextId: done.contextId, taskId: done.id }) }));
  assert.deepEqual([more.contextId, more.status.state], [done.contextId, "completed"]);
  assert.notEqual(more.id, done.id);
  const streamed = await drain(notes.sendMessageStream({ message: userMessage("again", { contextId: done.contextId, taskId: more.id }) }));
  const last = streamed.at(-1) as TaskStatusUpdateEvent;
  assert.deepEqual([last.contextId, last.status.state, last.final], [done.contextId, "completed", true]);
  assert.ok(![done.id, more.id].includes(last.taskId), "the stream runs a new task too");

  const approval = await client("approval");
  const asked = asTask(await approval.sendMessage({ message: userMessage("pay 5 EUR") }));
  assert.equal(asked.status.state, "input-required");
  await rejectsWith(approval.sendMessage({ message: userMessage("yes", { contextId: asked.contextId }) }), -32602, /taskId is required/);
  assert.equal((await approval.getTask({ id: asked.id })).status.state, "input-required", "the refused reply changed nothing");
  const resumed = asTask(await approval.sendMessage({ message: userMessage("yes", { contextId: asked.contextId, taskId: asked.id }) }));
  assert.deepEqual([resumed.id, resumed.status.state, artifactText(resumed)], [asked.id, "completed", "Done: pay 5 EUR"]);
});

test("edges: file parts reach the graph as LangChain content blocks", async () => {
  const echo = await client("echo-content");
  const png = Buffer.from("\x89PNG fake image").toString("base64");
  const task = asTask(
    await echo.sendMessage({
      message: {
        kind: "message",
        messageId: randomUUID(),
        role: "user",
        parts: [
          { kind: "text", text: "what is in these?" },
          { kind: "file", file: { bytes: png, mimeType: "image/png", name: "cat.png" } },
          { kind: "file", file: { uri: "https://files.example/report.pdf", mimeType: "application/pdf" } },
        ],
      },
    }),
  );
  assert.equal(task.status.state, "completed");
  assert.deepEqual(JSON.parse(artifactText(task)!), [
    { type: "text", text: "what is in these?" },
    { type: "image", mimeType: "image/png", data: png, metadata: { filename: "cat.png" } },
    { type: "file", url: "https://files.example/report.pdf", mimeType: "application/pdf" },
  ]);
  assert.equal(task.history?.[0]?.parts.length, 3, "the user's message is kept as sent");
});

test("edges: history holds every message the graph added, not only the first and last", async () => {
  const twoStep = await client("two-step");
  const task = asTask(await twoStep.sendMessage({ message: userMessage("go") }));
  assert.deepEqual(
    task.history?.map((message) => [message.role, textOf(message)]),
    [
      ["user", "go"],
      ["agent", "thinking..."],
      ["agent", "done thinking"],
    ],
  );
  assert.equal(task.status.message?.messageId, task.history?.at(-1)?.messageId, "the status message is the last one, not a copy");
});

test("edges: every push notification method is -32003 (not supported)", async () => {
  // The Client refuses by itself, reading the card's capabilities.pushNotifications (false); its transport asks the server.
  await assert.rejects(async () =>
    notes.setTaskPushNotificationConfig({ taskId: "t", pushNotificationConfig: { url: "http://127.0.0.1:1/hook" } }),
  );
  const done = asTask(await notes.sendMessage({ message: userMessage("hook") }));
  const transport = notes.transport;
  const config = { taskId: done.id, pushNotificationConfig: { url: "http://127.0.0.1:1/hook" } };
  await rejectsWith(transport.setTaskPushNotificationConfig(config), -32003);
  await rejectsWith(transport.getTaskPushNotificationConfig({ id: done.id }), -32003);
  await rejectsWith(transport.listTaskPushNotificationConfig({ id: done.id }), -32003);
  await rejectsWith(transport.deleteTaskPushNotificationConfig({ id: done.id, pushNotificationConfigId: "x" }), -32003);
});

test("resubscribeTask follows a running task to its end; for a task that ended, one event: the task as it ended", async () => {
  const running = asTask(await waiter.sendMessage({ message: userMessage("wait 300"), configuration: { blocking: false } }));
  const followed = (await drain(waiter.resubscribeTask({ id: running.id }))) as Array<Task | TaskStatusUpdateEvent>;
  const last = followed.at(-1) as TaskStatusUpdateEvent;
  assert.deepEqual([last.kind, last.status.state, last.final], ["status-update", "completed", true]);
  // First the task as it is now (working: the run started before the follower came), not as it was submitted.
  assert.deepEqual([followed[0]?.kind, followed[0]?.status.state], ["task", "working"]);
  assert.equal(followed.filter((event) => event.kind === "task").length, 1, "the run's own first events are not replayed");
  const ended = (await drain(waiter.resubscribeTask({ id: running.id }))) as Task[];
  assert.deepEqual(
    ended.map((event) => [event.kind, event.status.state]),
    [["task", "completed"]],
  );
});
