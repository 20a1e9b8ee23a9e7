import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { test } from "node:test";
import { AIMessage } from "@langchain/core/messages";
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { context, SpanStatusCode } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import pino from "pino";
import type { Assistant } from "../../src/a2a/graph-config.ts";
import { TaskRunner } from "../../src/a2a/task-runner.ts";
import type { Lease } from "../../src/a2a/task-store.ts";
import { SqliteTaskStore } from "../../src/a2a/task-store-sqlite.ts";
import type { StreamEvent, Task } from "../../src/protocol/a2a.ts";
import { tempDir } from "../helpers/processes.ts";

// A run whose end the task store refuses (PostgreSQL refuses a NUL character in JSON, 22P05; a database away past
// the give-up time): the task must not stay "submitted" (it would read as running forever) nor its span stay open.

/** A real SQLite task store whose `finish` throws the first `refusals` times. */
class RefusingStore extends SqliteTaskStore {
  refusals: number;
  constructor(path: string, refusals: number) {
    super(path, 60_000);
    this.refusals = refusals;
  }
  override async finish(task: Task, lease: Lease, sessionId: string, now: number): Promise<boolean> {
    if (this.refusals-- > 0) throw Object.assign(new Error("unsupported Unicode escape sequence"), { code: "22P05" });
    return super.finish(task, lease, sessionId, now);
  }
}

async function runOnce(refusals: number) {
  const store = new RefusingStore(join(tempDir("unstored-"), "tasks.db"), refusals);
  const spans = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] });
  const lines: { msg: string }[] = [];
  const logger = pino({ level: "error" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const runner = new TaskRunner({ store, tracer: provider.getTracer("test"), logger, now: Date.now, sessionId: () => "s" });
  const graph = new StateGraph(MessagesAnnotation)
    .addNode("answer", () => ({ messages: [new AIMessage("an answer the store refuses\u0000")] }))
    .addEdge(START, "answer")
    .addEdge("answer", END)
    .compile({ checkpointer: new MemorySaver() });
  const assistant: Assistant = { graphId: "g", uuid: randomUUID(), description: "", graph: graph as never, hasMessages: true };
  const message = {
    kind: "message" as const,
    role: "user" as const,
    messageId: randomUUID(),
    parts: [{ kind: "text" as const, text: "hi" }],
  };
  const started = await runner.start(assistant, { message }, { threadId: undefined, parent: context.active() }, "refuse");
  const events: StreamEvent[] = [];
  for await (const event of started.events()) events.push(event);
  const answered = await started.done;
  const stored = (await store.get(started.task.id))!.task;
  await store.close();
  await provider.forceFlush();
  return { answered, stored, events, span: spans.getFinishedSpans()[0], lines };
}

test("a run whose end the store refuses ends failed, stored so, with its span ended in error and a final event", async () => {
  const { answered, stored, events, span, lines } = await runOnce(1);
  assert.equal(answered.status.state, "failed");
  assert.match(JSON.stringify(answered.status.message?.parts), /could not store its result; send the message again/);
  assert.equal(stored.status.state, "failed", "the store holds the task failed, not submitted");
  assert.deepEqual(stored.artifacts, [], "the refused output is left out");
  const last = events.at(-1);
  assert.ok(last?.kind === "status-update" && last.final && last.status.state === "failed", "subscribers get the final status");
  assert.ok(span, "the run's span is ended");
  assert.equal(span.status.code, SpanStatusCode.ERROR);
  assert.equal(span.attributes["a2a.task_state"], "failed");
  assert.ok(lines.some((line) => line.msg === "a task's end could not be stored; the task is failed"));
});

test("a store that refuses the failed task too: the answer and the span still end, and the log says the task stays unfinished", async () => {
  const { answered, stored, span, lines } = await runOnce(2);
  assert.equal(answered.status.state, "failed");
  assert.equal(stored.status.state, "submitted");
  assert.equal(span?.status.code, SpanStatusCode.ERROR);
  assert.ok(lines.some((line) => /could not be stored either; it stays unfinished until this server stops/.test(line.msg)));
});
