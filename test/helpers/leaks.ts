import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import type { TestContext } from "node:test";
import Database from "better-sqlite3";
import { query } from "./postgres.ts";
import { tempDir } from "./processes.ts";

// What a service's failed start or its close could leave behind: a SQLite file still open, PostgreSQL connections, a
// timer or socket that keeps the process alive.

/** A loopback port a plain TCP server holds for the rest of the test: a service told to listen there fails to. */
export async function takenPort(t: TestContext): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as { port: number }).port;
}

/**
 * Whether the SQLite database at `path` can be locked exclusively now: "ok", or SQLite's code (SQLITE_BUSY while any
 * connection, of this process or another, still has it open in WAL mode).
 */
export function exclusiveLock(path: string): string {
  const db = new Database(path, { timeout: 0 });
  try {
    db.pragma("locking_mode = EXCLUSIVE");
    db.exec("BEGIN EXCLUSIVE; COMMIT");
    return "ok";
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  } finally {
    db.close();
  }
}

/**
 * The connections open to database `name`, the asking one not counted, once they have settled (a closed client's
 * backend leaves pg_stat_activity a moment after it): what is still open 2 s on, a pool's idle clients for instance.
 */
export async function connectionsTo(name: string): Promise<number> {
  const deadline = Date.now() + 2_000;
  for (;;) {
    const [row] = await query<{ count: string }>(
      "postgres://postgres@127.0.0.1:5432/postgres",
      "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
      [name],
    );
    const count = Number(row!.count);
    if (count === 0 || Date.now() > deadline) return count;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Runs `script` (an ES module: it may import src/ by URL) in a Node process of its own, which must print
 * "start failed" when the service's start rejects, and must not exit by itself: resolves with how long the process
 * lived after that line (a timer, socket or child left behind keeps it alive) and its output. Killed after `limitMs`.
 */
export function lifeAfterFailedStart(script: string, limitMs = 20_000): Promise<{ lingeredMs: number | undefined; output: string }> {
  // A file, not `-e`: the control plane's local deployer takes the process's argv[1] for its own entry point.
  const file = join(tempDir("failed-start-"), "start.mjs");
  writeFileSync(file, script);
  const child = spawn(process.execPath, [file], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  let failedAt: number | undefined;
  const onData = (chunk: Buffer) => {
    output += chunk;
    if (failedAt === undefined && output.includes("start failed")) failedAt = performance.now();
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  const killer = setTimeout(() => child.kill("SIGKILL"), limitMs);
  return new Promise((resolve) =>
    child.on("close", (code, signal) => {
      clearTimeout(killer);
      const lingeredMs = failedAt === undefined || signal ? undefined : performance.now() - failedAt;
      resolve({ lingeredMs, output: `${output}\n(exit ${code ?? signal})` });
    }),
  );
}

/** An absolute file: URL of a module of src/, for a child's script to import. */
export const srcModule = (path: string): string => new URL(`../../src/${path}`, import.meta.url).href;
