import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { after, afterEach, beforeEach, describe, test } from "node:test";
import { AIMessage } from "@langchain/core/messages";
import { END, MemorySaver, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { context, trace } from "@opentelemetry/api";
import { connectionSettings, guardedClient, openPool } from "../../src/pg-pool.ts";
import pino from "pino";
import type { Assistant } from "../../src/a2a/graph-config.ts";
import { fenceCheckpointer } from "../../src/a2a/fenced-checkpointer.ts";
import { ReplicaBus } from "../../src/a2a/replica-bus.ts";
import { ReplicaWatch } from "../../src/a2a/replica-watch.ts";
import { RpcError } from "../../src/a2a/rpc-error.ts";
import { TaskRunner } from "../../src/a2a/task-runner.ts";
import type { TaskStore } from "../../src/a2a/task-store.ts";
import { SqliteTaskStore } from "../../src/a2a/task-store-sqlite.ts";
import { PostgresTaskStore } from "../../src/a2a/task-store-postgres.ts";
import type { Task } from "../../src/protocol/a2a.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { tempDir } from "../helpers/processes.ts";
import { SimulatedTime } from "../helpers/simulated-time.ts";

// Fencing between agent server replicas, on simulated time and both engines: replica A stalls while it runs a
// task (its heartbeats stop); replica B fails the task after the replica timeout, bumping its epoch, and runs the
// context's next message; when A wakes, it writes nothing more of its task: not its end, not its events.

const TIMEOUT_MS = 30_000;
const MINUTE = 60_000;

/** Until `condition` holds, on real time (the stores' I/O is real; the clock is not): 5 s at most. */
async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 5_000;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Each replica's copy of a graph whose "stall" message waits for the test to wake it (what the stalled replica's
 * run does meanwhile does not matter: its process is stopped), noting the abort signal if one comes; any other
 * message is answered at once. Their conversations are in one checkpointer, as in one database.
 */
function stallingGraph() {
  let wake!: () => void;
  const woken = new Promise<void>((resolve) => (wake = resolve));
  const seen = { aborted: false };
  const build = () =>
    new StateGraph(MessagesAnnotation)
      .addNode("answer", async (state, config) => {
        const text = String(state.messages.at(-1)?.content);
        if (text === "stall") {
          config.signal?.addEventListener("abort", () => (seen.aborted = true));
          await woken;
        }
        return { messages: [new AIMessage(`answered ${text}`)] };
      })
      .addEdge(START, "answer")
      .addEdge("answer", END)
      .compile();
  return { build, conversations: new MemorySaver(), wake, seen };
}

interface Replica {
  assistant: Assistant;
  store: TaskStore;
  runner: TaskRunner;
  watch: ReplicaWatch;
  close(): Promise<void>;
}

/** A location both replicas open: a SQLite file, or a PostgreSQL database (with the replica bus). */
const engines: { name: string; location(): Promise<() => Promise<{ store: TaskStore; bus?: ReplicaBus; close(): Promise<void> }>> }[] = [
  {
    name: "sqlite",
    location: async () => {
      const path = join(tempDir("fencing-"), "tasks.db");
      return async () => {
        const store = new SqliteTaskStore(path, MINUTE, TIMEOUT_MS);
        return { store, close: () => store.close() };
      };
    },
  },
  {
    name: "postgresql",
    location: async () => {
      const database = await freshDatabase("egress_fencing");
      cleanups.push(database.drop);
      return async () => {
        const silent = pino({ level: "silent" });
        const pool = openPool({ url: database.url, max: 4 }, silent, "test pool");
        const store = await PostgresTaskStore.open(pool, MINUTE, TIMEOUT_MS);
        const bus = await ReplicaBus.open(pool, () => guardedClient(connectionSettings(database.url), silent, "test LISTEN"), silent);
        return {
          store,
          bus,
          async close() {
            await bus.close();
            await store.close();
            await pool.end();
          },
        };
      };
    },
  },
];

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

let time: SimulatedTime;
beforeEach(() => (time = SimulatedTime.start()));
afterEach(() => time.stop());

const failed = (task: Task): Task => ({ ...task, status: { state: "failed", timestamp: new Date(time.now()).toISOString() } });
const message = (text: string, contextId?: string) => ({
  message: {
    kind: "message" as const,
    role: "user" as const,
    messageId: randomUUID(),
    parts: [{ kind: "text" as const, text }],
    contextId,
  },
});
const run = () => ({ threadId: undefined, parent: context.active() });

for (const engine of engines) {
  describe(`replica fencing on ${engine.name}`, () => {
    async function replicas() {
      const open = await engine.location();
      const { build, conversations, wake, seen } = stallingGraph();
      const lines: Record<string, unknown>[] = [];
      const logger = pino({ level: "warn" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const start = async (): Promise<Replica> => {
        const { store, bus, close } = await open();
        const runner = new TaskRunner({ store, bus, tracer: trace.getTracer("test"), logger, now: time.now, sessionId: () => "s" });
        const watch = new ReplicaWatch({ store, timeoutMs: TIMEOUT_MS, failed, runs: runner, logger, now: time.now });
        await watch.start();
        const graph = build();
        graph.checkpointer = fenceCheckpointer(conversations, { store, leaseOf: (id) => runner.leaseOf(id), lost: (l) => runner.lost(l) });
        return {
          assistant: {
            graphId: "staller",
            uuid: "8e0f0a4e-0d3c-4a53-9d38-2f1f1a7b9c11",
            description: "",
            graph: graph as never,
            hasMessages: true,
          },
          store,
          runner,
          watch,
          async close() {
            await runner.stop(0);
            await watch.stop();
            await close();
          },
        };
      };
      const a = await start();
      const b = await start();
      cleanups.push(a.close, b.close);
      return { a, b, wake, seen, lines, conversations };
    }
    const state = async (store: TaskStore, taskId: string) => (await store.get(taskId))?.task.status.state;
    const running = async (store: TaskStore, ids: string[]) => {
      let count = 0;
      for (const id of ids) if (["submitted", "working"].includes((await state(store, id)) ?? "")) count++;
      return count;
    };

    /** A runs a task and stalls (its heartbeats stop); B fails the task once A has been silent for the timeout. */
    async function stallAndTakeOver(a: Replica, b: Replica) {
      const stale = await a.runner.start(a.assistant, message("stall"), run(), "refuse");
      const { contextId } = stale.task;
      const refused = await b.runner.start(b.assistant, message("next", contextId), run(), "refuse").catch((err) => err);
      assert.ok(refused instanceof RpcError && refused.code === -32004, "no second run in the context beside a live one");
      const stalledAt = time.now();
      await a.watch.stop();
      let failedAt: number | undefined;
      for (let step = 0; step < 10 && failedAt === undefined; step++) {
        await time.advance(5_000, 5_000);
        await b.watch.sweep(); // after the round the timer started, whose end is not exposed
        if ((await state(b.store, stale.task.id)) === "failed") failedAt = time.now();
      }
      const silent = failedAt! - stalledAt;
      assert.ok(silent >= TIMEOUT_MS && silent <= TIMEOUT_MS + 10_000, `failed after ${silent} ms of silence`);
      assert.equal((await b.store.get(stale.task.id))!.epoch, 2, "the takeover bumped the epoch");
      return { stale, contextId };
    }

    test("a stalled replica's task is failed by another after the timeout; its late result is refused and logged", async () => {
      const { a, b, wake, lines, conversations } = await replicas();
      const { stale, contextId } = await stallAndTakeOver(a, b);

      // The context's next message runs on B now: the only run in the context.
      const next = await b.runner.start(b.assistant, message("next", contextId), run(), "refuse");
      // The stalled run is fenced (failed) before the next one may start; the next may already have ended.
      assert.equal(await state(b.store, stale.task.id), "failed");
      assert.ok((await running(b.store, [stale.task.id, next.task.id])) <= 1);
      assert.equal((await next.done).status.state, "completed");

      // A wakes and ends its run: refused; what its callers get is the task as B left it.
      wake();
      assert.equal((await stale.done).status.state, "failed");
      assert.equal(await state(b.store, stale.task.id), "failed", "not resurrected");
      assert.equal(await state(b.store, next.task.id), "completed");
      const discarded = lines.filter((line) => line.msg === "a stale run's result is discarded: another replica took its task over");
      assert.deepEqual(
        discarded.map(({ taskId, contextId, epoch }) => ({ taskId, contextId, epoch })),
        [{ taskId: stale.task.id, contextId, epoch: 1 }],
      );
      assert.doesNotMatch(JSON.stringify(lines), /answered stall/, "no payload in the log");
      const thread = await conversations.getTuple({ configurable: { thread_id: contextId } });
      const said = (thread!.checkpoint.channel_values.messages as { content: string }[]).map((m) => m.content);
      // The stalled run's own input is there when A checkpointed it before stalling, and not when the takeover fenced
      // that first write (the run failed either way); its answer never is.
      assert.deepEqual(
        said.filter((m) => m !== "stall"),
        ["next", "answered next"],
        "the conversation is B's: the stale run's answer is not in it",
      );
      const counts = await b.store.closedCounts(time.now(), true);
      assert.equal(
        counts.reduce((sum, c) => sum + c.runs, 0),
        1,
        "the discarded run is not counted",
      );
    });

    test("a stalled replica learns at its next heartbeat that it lost the lease, and aborts its run", async () => {
      const { a, b, wake, seen, lines } = await replicas();
      const { stale, contextId } = await stallAndTakeOver(a, b);
      await a.watch.start(); // A's first round as it wakes
      await until(async () => seen.aborted, "the run's AbortSignal");
      wake();
      assert.equal((await stale.done).status.state, "failed");
      assert.equal(await state(b.store, stale.task.id), "failed", "neither canceled nor completed");
      const lost = lines.filter(
        (line) => line.msg === "this replica lost a run's lease (another replica took its task over); the run is aborted",
      );
      assert.deepEqual(
        lost.map(({ taskId, contextId, epoch }) => ({ taskId, contextId, epoch })),
        [{ taskId: stale.task.id, contextId, epoch: 1 }],
      );
    });
  });
}
