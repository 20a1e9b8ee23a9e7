// The agent server's figures, taken from a real `egress-agent a2a serve` process serving the example graph
// (examples/agent-server/graph.json: assistant `notes`, deterministic, no model call), and their in-process floor.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { Agent, request } from "undici";
import type { Task } from "../src/protocol/a2a.ts";
import { startService, tempDir } from "../test/helpers/processes.ts";
import { converse, type Load, type Turn } from "./conversations.ts";
import { CLIENTS, rss, sleep } from "./measure.ts";

const GRAPH_CONFIG = new URL("../examples/agent-server/graph.json", import.meta.url).pathname;
const ASSISTANT = "notes";
/** Turns of each conversation in the second load; its requests are as many as the first load's. */
export const TURNS = 10;
/** New conversations sent before either load, not measured (the JIT, SQLite's first pages). */
const WARMUP = 200;
/** After ready, before the idle RSS is read. */
const SETTLE_MS = 3_000;

/** The conversation a message continues: the previous answer's contextId (its task ended: it is not named again). */
interface Continued {
  contextId: string;
}

/** A JSON-RPC message/send body: a user's text message, a new conversation unless `previous` is given. */
export function messageBody(text: string, previous?: Continued): string {
  const message = { kind: "message", role: "user", messageId: randomUUID(), parts: [{ kind: "text", text }], ...previous };
  return JSON.stringify({ jsonrpc: "2.0", id: randomUUID(), method: "message/send", params: { message } });
}

/** `count` message/send bodies, each a new conversation (the bodies of the HTTP floor). */
export const messageBodies = (count: number) =>
  Array.from({ length: count }, (_, i) => messageBody(`Note 1 of conversation ${i}: buy milk, call the plumber`));

/** A turn sent as message/send to `url`; any answer but a completed task stops the run. */
function sender(url: string, dispatcher: Agent): Turn<Continued> {
  return async (text, previous) => {
    const response = await request(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: messageBody(text, previous),
      dispatcher,
    });
    const answer = (await response.body.json()) as { result?: Task; error?: unknown };
    if (response.statusCode !== 200 || answer.result?.status.state !== "completed") {
      throw new Error(`${url} answered ${response.statusCode}: ${JSON.stringify(answer.error ?? answer.result?.status)}`);
    }
    return { contextId: answer.result.contextId };
  };
}

export interface AgentServerRun {
  /** `requests` messages, each a new conversation. */
  fresh: Load;
  /** `requests` messages: conversations of TURNS turns, each turn continuing the previous answer. */
  continued: Load;
  idleRss: number;
  rssAfterFresh: number;
  rssAfterContinued: number;
}

/**
 * `a2a serve` on the example graph, CLIENTS clients (keep-alive connections): RSS after start, then WARMUP new
 * conversations, `requests` new conversations, and `requests` turns of TURNS-turn conversations, with RSS after each
 * load. One server and one data directory for all, in that order, as the in-process floor does it.
 */
export async function agentServer(requests: number): Promise<AgentServerRun> {
  const dir = tempDir("egress-bench-a2a-");
  const server = await startService(
    ["a2a", "serve", "--config", GRAPH_CONFIG, "--listen", "127.0.0.1:0", "--data-dir", join(dir, "data")],
    "agent server listening",
  );
  const dispatcher = new Agent({ connections: CLIENTS });
  try {
    const pid = server.child.pid!;
    await sleep(SETTLE_MS);
    const idleRss = rss(pid);
    const send = sender(`${server.url}/a2a/${ASSISTANT}`, dispatcher);
    await converse(WARMUP, 1, CLIENTS, send);
    const fresh = await converse(requests, 1, CLIENTS, send);
    const rssAfterFresh = rss(pid);
    const continued = await converse(Math.ceil(requests / TURNS), TURNS, CLIENTS, send);
    return { fresh, continued, idleRss, rssAfterFresh, rssAfterContinued: rss(pid) };
  } finally {
    await dispatcher.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The floor of agentServer(requests): the same graph invoked in-process on the same checkpointer, the same loads with
 * the same concurrency, in a process of its own with `flags` (the CLI's) — bench/agent-graph-floor.ts.
 */
export async function inProcessGraph(requests: number, flags: readonly string[]): Promise<AgentServerRun> {
  const script = new URL("agent-graph-floor.ts", import.meta.url).pathname;
  const args = [...flags, script, ...[requests, TURNS, CLIENTS, WARMUP, SETTLE_MS].map(String)];
  const { stdout } = await promisify(execFile)(process.execPath, args, {
    cwd: new URL("..", import.meta.url).pathname,
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(stdout) as AgentServerRun;
}
