// The in-process floor of the agent server's figures (bench/agent-server.ts), in a process of its own started with
// the CLI's Node flags, as the agent server is:
//   node FLAGS bench/agent-graph-floor.ts REQUESTS TURNS CLIENTS WARMUP SETTLE_MS
// The example graph (examples/agent-server/notes-agent.ts) invoked directly on LangGraph's SQLite checkpointer in a
// temporary directory: what every A2A message/send costs the server at least, without HTTP, JSON-RPC or the task
// store. It gets the server's loads in the server's order (warm-up, REQUESTS new conversations, then REQUESTS turns
// of TURNS-turn conversations) and prints one JSON line: both loads, and its RSS idle and after each load.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { graph } from "../examples/agent-server/notes-agent.ts";
import { converse, type Turn } from "./conversations.ts";

const [requests, turns, clients, warmup, settleMs] = process.argv.slice(2).map(Number) as [number, number, number, number, number];
const dir = mkdtempSync(join(tmpdir(), "egress-bench-floor-"));
const checkpointer = SqliteSaver.fromConnString(join(dir, "threads.db"));
graph.checkpointer = checkpointer;

/** One invoke on the conversation's thread (a new one on its first turn); the thread id is what the next turn continues. */
const invoke: Turn<string> = async (text, threadId = randomUUID()) => {
  const state = await graph.invoke({ messages: [{ role: "human", content: text }] }, { configurable: { thread_id: threadId } });
  if (state.messages.at(-1)?.getType() !== "ai") throw new Error("the graph did not answer");
  return threadId;
};

try {
  await sleep(settleMs);
  const idleRss = process.memoryUsage().rss;
  await converse(warmup, 1, clients, invoke);
  const fresh = await converse(requests, 1, clients, invoke);
  const rssAfterFresh = process.memoryUsage().rss;
  const continued = await converse(Math.ceil(requests / turns), turns, clients, invoke);
  const rssAfterContinued = process.memoryUsage().rss;
  console.log(JSON.stringify({ fresh, continued, idleRss, rssAfterFresh, rssAfterContinued }));
} finally {
  checkpointer.db.close();
  rmSync(dir, { recursive: true, force: true });
}
