import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { RUNTIME_V8_FLAGS } from "../../bin/v8-flags.js";
import type { TestLicense } from "./fixtures.ts";

let CLI = new URL("../../src/cli.ts", import.meta.url).pathname;
let NODE_FLAGS: string[] = [];

/**
 * Runs later processes from another entry point (the benchmarks use bin/egress-agent.js on dist/, as the image does),
 * with the Node flags of its `#!/usr/bin/env -S node ...` line, as executing the file would apply them.
 */
export function useCli(path: string): void {
  CLI = path;
  NODE_FLAGS = shebangNodeFlags(path);
}

/** The Node flags of a file's `#!/usr/bin/env -S node ...` line (none without one). */
export function shebangNodeFlags(path: string | URL): string[] {
  const shebang = /^#!\/usr\/bin\/env -S node (.*)/.exec(readFileSync(path, "utf8"));
  return shebang ? shebang[1]!.trim().split(/\s+/) : [];
}

/**
 * The Node flags a process standing for the sidecar runs with (a floor of the bench): the entry point's shebang's, and
 * those it sets as it starts (bin/v8-flags.js), which a process not started through it must be given.
 */
export const cliNodeFlags = (): readonly string[] => (NODE_FLAGS.length === 0 ? [] : [...NODE_FLAGS, ...RUNTIME_V8_FLAGS]);

const tempDirs: string[] = [];
// Each test file runs in a process of its own: the directories its tests made are removed when that process exits.
process.on("exit", () => {
  for (const dir of tempDirs) {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      process.stderr.write(`# could not remove ${dir}: ${(err as Error).message}\n`);
    }
  }
});

/** A fresh directory under the OS temp dir, removed when the test file's process exits. */
export function tempDir(prefix = "egress-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // Traversable, not listable: as root, the control plane runs deployments as users of their own, who must reach a
  // graph's directory in here as they would in an operator's tree.
  chmodSync(dir, 0o711);
  tempDirs.push(dir);
  return dir;
}

/** Runs the real CLI to completion; `onStdout` sees its output as it comes. */
export function runCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string; onStdout?: (stdoutSoFar: string) => void } = {},
) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [...NODE_FLAGS, CLI, ...args], { env: { ...process.env, ...options.env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      options.onStdout?.(stdout);
    });
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? "");
  });
}

/** A serving subcommand of the real CLI, started as its own process. */
export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Sends a signal and waits for exit; resolves with the exit code (null when killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `egress-agent ARGS` and waits for the JSON log line `readyMessage`, which carries the `url`.
 * `launcher`: a command that ends by exec-ing its arguments (node, the CLI, ARGS), e.g. to give the process a
 * mount namespace of its own; the child's pid stays the CLI's.
 */
export function startService(
  args: string[],
  readyMessage: string,
  env: NodeJS.ProcessEnv = {},
  launcher: string[] = [],
  nodeFlags: string[] = [],
): Promise<ServiceProcess> {
  const [command, ...commandArgs] = [...launcher, process.execPath, ...NODE_FLAGS, ...nodeFlags, CLI, ...args];
  const child = spawn(command!, commandArgs, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no "${readyMessage}" within 10 s; output:\n${output}`));
    }, 10_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      for (const line of output.split("\n")) {
        if (!line.includes(readyMessage)) continue;
        try {
          const entry = JSON.parse(line) as { msg?: string; url?: string };
          if (entry.msg === readyMessage && entry.url) {
            clearTimeout(timer);
            resolve({
              url: entry.url,
              child,
              output: () => output,
              stop: async (signal = "SIGTERM") => {
                if (child.exitCode === null && child.signalCode === null) child.kill(signal);
                return exited;
              },
            });
            return;
          }
        } catch {
          // a partial line; wait for more
        }
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (chunk: Buffer) => (output += chunk));
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before "${readyMessage}"; output:\n${output}`));
    });
  });
}

export interface BeaconFixture {
  dir: string;
  configPath: string;
  dataDir: string;
}

/** Writes a beacon config with the given licenses into a fresh (or given) directory. */
export function beaconConfig(licenses: TestLicense[], extra: Record<string, unknown> = {}, dir = tempDir()): BeaconFixture {
  const dataDir = join(dir, "beacon-data");
  const configPath = join(dir, "beacon.yaml");
  writeFileSync(configPath, stringify({ listen: "127.0.0.1:0", dataDir, licenses, ...extra }));
  return { dir, configPath, dataDir };
}

export function startBeacon(fixture: BeaconFixture, env: NodeJS.ProcessEnv = {}): Promise<ServiceProcess> {
  return startService(["beacon", "--config", fixture.configPath], "beacon listening", env);
}

/** POSTs JSON and returns status and parsed body. */
export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

export interface AgentFixture {
  dir: string;
  configPath: string;
  dataDir: string;
}

/** Writes a sidecar config with fast timings for tests; `extra` overrides any key. */
export function agentConfig(beaconUrl: string, extra: Record<string, unknown> = {}, dir = tempDir()): AgentFixture {
  const dataDir = join(dir, "agent-data");
  const configPath = join(dir, "egress.yaml");
  writeFileSync(
    configPath,
    stringify({
      beaconUrl,
      listen: "127.0.0.1:0",
      dataDir,
      intervals: { flush: "50ms" },
      retry: { minBackoff: "50ms", maxBackoff: "400ms", requestTimeout: "5s" },
      ...extra,
    }),
  );
  return { dir, configPath, dataDir };
}

/**
 * Services started side by side: all of them, or, when one fails to start, none (those that did are stopped before
 * the error is thrown; a survivor would keep the test file's process alive until the runner's timeout).
 */
export async function startTogether<T extends readonly Promise<{ stop(): Promise<unknown> }>[]>(
  starts: readonly [...T],
): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled = await Promise.allSettled(starts);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (!failed) return settled.map((s) => (s as PromiseFulfilledResult<unknown>).value) as { -readonly [K in keyof T]: Awaited<T[K]> };
  await Promise.all(settled.flatMap((s) => (s.status === "fulfilled" ? [s.value.stop()] : [])));
  throw failed.reason;
}

/** Starts `egress-agent start`; the license key goes in through the environment, as the chart does it. */
export function startAgentProcess(fixture: AgentFixture, env: NodeJS.ProcessEnv = {}): Promise<ServiceProcess> {
  return startService(["start", "--config", fixture.configPath], "sidecar listening", env);
}

export async function getJson(url: string): Promise<any> {
  const response = await fetch(url);
  return response.json();
}

/** Polls `probe` every 50 ms until it returns a truthy value; fails after `timeoutMs` with the last value. */
export async function waitFor<T>(probe: () => T | Promise<T>, timeoutMs = 15_000, what = "condition"): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await probe();
    if (last) return last as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A loopback URL where nothing listens: port 4 is privileged and unassigned, so nothing on a test machine serves it
 * and a connection is refused at once (where a port found free and released could be bound by another process
 * meanwhile). Not 1, 7, 9 and the like: fetch refuses those "bad ports" without trying.
 */
export const NOWHERE = "http://127.0.0.1:4";

/** Pids of the processes with `text` in their command line (e.g. the agent servers of a test's data dir). */
export function processesWith(text: string): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(text);
      } catch {
        return false;
      }
    })
    .map(Number);
}
