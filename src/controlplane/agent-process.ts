import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { KiB, readCappedText } from "../http/capped-answer.ts";

// The local deployer's view of an agent server process: its port, its health, its signals and whether it still
// runs (and is still ours: a pid is reused after a restart).

export const ALIVE_TIMEOUT_MS = 2_000;
const POLL_MS = 100;
/** The agent server's /ok answers `{"ok":true}`; a deployment's code could answer anything there. */
const OK_ANSWER_CAP = 4 * KiB;

/** The preferred port when it is free (a redeploy keeps its URL), else any free loopback port. */
export async function loopbackPort(preferred: number): Promise<number> {
  const server = createServer();
  const bind = (port: number) =>
    new Promise<number>((done, fail) => {
      server.once("error", fail);
      server.listen(port, "127.0.0.1", () => done((server.address() as { port: number }).port));
    });
  const port = await bind(preferred).catch(() => bind(0));
  await new Promise((done) => server.close(done));
  return port;
}

/**
 * Waits for GET /ok, asking every POLL_MS (100 ms) until `timeoutMs`: undefined once it answers, else what went wrong
 * (the process exited, or time ran out).
 */
export async function untilHealthy(url: string, child: Pick<ChildProcess, "once">, timeoutMs: number): Promise<string | undefined> {
  let ended: string | undefined;
  child.once("exit", (code, signal) => (ended = `exited (${signal ?? `code ${code}`}) before answering /ok`));
  child.once("error", (err) => (ended = `could not be started (${err.message})`));
  const deadline = Date.now() + timeoutMs;
  while (ended === undefined) {
    if (await answersOk(url, Math.min(ALIVE_TIMEOUT_MS, timeoutMs))) return undefined;
    if (Date.now() >= deadline) return `did not answer /ok within ${timeoutMs / 1000} s`;
    await sleep(POLL_MS);
  }
  return ended;
}

export async function answersOk(url: string, timeoutMs: number): Promise<boolean> {
  try {
    const okUrl = new URL("/ok", url).href;
    const response = await fetch(okUrl, { redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
    // The deployment's own code answers here: `{"ok":true}` is all that is read of it.
    const text = await readCappedText(response, OK_ANSWER_CAP, okUrl);
    return response.ok && (JSON.parse(text) as { ok?: unknown }).ok === true;
  } catch {
    return false;
  }
}

export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

export async function exited(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (processAlive(pid)) {
    if (Date.now() >= deadline) return false;
    await sleep(POLL_MS);
  }
  return true;
}

/** Whether the process runs; a zombie does not (an orphan whose reaper is a PID 1 that does not reap). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
  const stat = readProc(pid, "stat");
  return stat === undefined || stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
}

/**
 * Whether `pid` is still the agent server of that data dir, not a process that got its number after a restart:
 * it is signalled only then. Judged by what the process itself cannot change, since it runs the deployment's code
 * (which may rewrite its own command line: `process.title`, and then could never be stopped): in a namespace, the
 * bwrap that started it (its parent, outside the namespace) names the data dir; with a user of its own, it runs as a
 * deployment's own user (`uid`). Unisolated, only its command line says. Without /proc (not Linux) the pid is
 * trusted.
 */
export function isAgentServerOf(pid: number, agentDataDir: string, how: { wrapped: boolean; uid?: number | undefined }): boolean {
  if (!existsSync("/proc/self/cmdline")) return processAlive(pid);
  if (!processAlive(pid)) return false;
  if (how.uid !== undefined && !how.wrapped) return Number(statusField(pid, "Uid")) === how.uid;
  const holder = how.wrapped ? Number(statusField(pid, "PPid")) : pid;
  return readProc(holder, "cmdline")?.split("\0").includes(agentDataDir) ?? false;
}

/** The first number of a /proc/<pid>/status field (Uid: the real user). */
function statusField(pid: number, field: string): string | undefined {
  return new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(readProc(pid, "status") ?? "")?.[1];
}

function readProc(pid: number, file: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * Until `child` (the process the control plane spawned: bwrap, in a namespace) has exited, `timeoutMs` at most: once
 * the agent server inside is killed, its wrapper ends too, and a failed deploy leaves nothing running.
 */
export async function childExited(child: Pick<ChildProcess, "exitCode" | "signalCode" | "once">, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await Promise.race([new Promise((done) => child.once("exit", done)), sleep(timeoutMs)]);
}
