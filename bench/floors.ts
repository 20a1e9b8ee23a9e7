// Floors: the same work done by the bare parts, measured in the same run as the sidecar's figures.
import { execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import Fastify from "fastify";
import { BeaconStore } from "../src/beacon/store.ts";
import { tuneForIngest, uuidBytes } from "../src/beacon/trace-insert.ts";
import { traceTransaction } from "../test/helpers/fixtures.ts";
import { cpuSeconds, postAll } from "./measure.ts";

/** Seconds to insert the transactions of `bodies` with raw better-sqlite3, one transaction per body. */
export function sqliteInsertSeconds(bodies: readonly string[]): number {
  const dir = mkdtempSync(join(tmpdir(), "egress-bench-floor-"));
  const db = new Database(join(dir, "floor.db"));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec("CREATE TABLE t (seq INTEGER PRIMARY KEY, record_id TEXT UNIQUE, body TEXT)");
  const insert = db.prepare("INSERT INTO t (record_id, body) VALUES (?, ?)");
  const rows = bodies.map((b) => (JSON.parse(b).trace_transactions as { id: string }[]).map((t) => [t.id, JSON.stringify(t)] as const));
  const started = performance.now();
  for (const batch of rows)
    db.transaction(() => {
      for (const [id, body] of batch) insert.run(id, body);
    })();
  const seconds = (performance.now() - started) / 1000;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return seconds;
}

/** Seconds to POST `bodies` (8 clients) to an empty Fastify route that parses JSON and answers 202. */
export async function httpPostSeconds(bodies: readonly string[]): Promise<number> {
  const app = Fastify({ bodyLimit: 64 * 1024 * 1024 });
  app.post("/", async (_request, reply) => reply.code(202).send({ ok: true }));
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as { port: number };
  const seconds = await postAll(`http://127.0.0.1:${port}/`, bodies);
  await app.close();
  return seconds;
}

/** Starts one hop of bench/relay-floor.ts with `flags` (the sidecar's); resolves to its URL, pid and a stop function. */
function startRelayHop(flags: readonly string[], args: string[]): Promise<{ url: string; pid: number; stop: () => void }> {
  const script = new URL("relay-floor.ts", import.meta.url).pathname;
  const child = spawn(process.execPath, [...flags, script, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`relay floor ${args[0]} exited with ${code}`)));
    child.stdout.once("data", (data) => resolve({ url: String(data).trim(), pid: child.pid!, stop: () => child.kill() }));
  });
}

export type RelayMode = "bytes" | "json" | "protobuf";

/**
 * Seconds to POST `bodies` (8 clients) through a bare two-hop relay in two processes (bench/relay-floor.ts): the
 * shape of the sidecar between the instance and the beacon, without validation, filter or disk. `json`: the relay
 * parses and re-serialises each body and the sink parses it; `protobuf`: the same with protobuf's decode and
 * encode; `bytes`: neither reads it. Also the relay hop's CPU seconds, the floor of the sidecar's CPU per MB.
 */
export async function httpRelay(
  bodies: readonly (string | Buffer)[],
  mode: RelayMode,
  flags: readonly string[],
): Promise<{ seconds: number; relayCpuSeconds: number }> {
  const sink = await startRelayHop(flags, ["sink", mode]);
  try {
    const relay = await startRelayHop(flags, ["relay", mode, sink.url]);
    try {
      const before = cpuSeconds(relay.pid);
      const seconds = await postAll(relay.url, bodies, { "content-type": contentTypeOf(mode) });
      return { seconds, relayCpuSeconds: cpuSeconds(relay.pid) - before };
    } finally {
      relay.stop();
    }
  } finally {
    sink.stop();
  }
}

export const contentTypeOf = (mode: RelayMode) => (mode === "protobuf" ? "application/x-protobuf" : "application/json");

/**
 * Seconds for raw better-sqlite3 to insert `count` transactions into the beacon's own table (its schema and
 * settings, synchronous FULL), `perCommit` to a transaction: what any drain into that beacon must pay.
 */
export function beaconInsertSeconds(count: number, perCommit: number): number {
  const dir = mkdtempSync(join(tmpdir(), "egress-bench-floor-"));
  new BeaconStore(dir).close(); // creates beacon.db with its schema
  const db = new Database(join(dir, "beacon.db"));
  db.pragma("synchronous = FULL");
  tuneForIngest(db);
  const insert = db.prepare(`INSERT INTO trace_transactions (id, license_id, organization_id, tenant_id, session_id, trace_count,
    start_insertion_time, end_insertion_time, start_interval_time, end_interval_time, status, num_failed_send_attempts,
    transaction_type, received_at) VALUES (${uuidBytes("?")}, 'bench', ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT (license_id, id) DO NOTHING`);
  const t = traceTransaction();
  const receivedAt = new Date().toISOString();
  const insertBatch = db.transaction((n: number) => {
    for (let i = 0; i < n; i++) {
      insert.run(
        randomUUID(),
        t.organization_id,
        t.tenant_id,
        randomUUID(),
        t.trace_count,
        t.start_insertion_time,
        t.end_insertion_time,
        t.start_interval_time,
        t.end_interval_time,
        t.status,
        t.transaction_type,
        receivedAt,
      );
    }
  });
  const started = performance.now();
  for (let done = 0; done < count; done += perCommit) insertBatch(Math.min(perCommit, count - done));
  const seconds = (performance.now() - started) / 1000;
  db.close();
  rmSync(dir, { recursive: true, force: true });
  return seconds;
}

/**
 * Resident memory (bytes) of a bare Node process, run with `flags`, holding what any sidecar holds: better-sqlite3
 * with a WAL database open, a loopback HTTP server that has answered its own node:http client (http, net, crypto,
 * zlib loaded; not fetch, which the sidecar does not load either), measured `settleMs` after that request.
 */
export function bareNodeRss(flags: readonly string[], settleMs: number): number {
  const dir = mkdtempSync(join(tmpdir(), "egress-bench-floor-"));
  const script = `
    const Database = require("better-sqlite3");
    const db = new Database(${JSON.stringify(join(dir, "floor.db"))});
    db.pragma("journal_mode = WAL");
    db.exec("CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)");
    db.prepare("INSERT INTO t VALUES (?, ?)").run("a", "{}");
    require("node:crypto").createHash("sha256").update("x").digest();
    require("node:zlib").gzipSync("x");
    const http = require("node:http");
    const server = http.createServer((req, res) => res.end("{}"));
    server.listen(0, "127.0.0.1", () => {
      http.get("http://127.0.0.1:" + server.address().port + "/", (res) => {
        res.resume();
        setTimeout(() => { console.log(process.memoryUsage().rss); process.exit(0); }, ${settleMs});
      });
    });`;
  const rss = Number(
    execFileSync(process.execPath, [...flags, "-e", script], { cwd: new URL("..", import.meta.url).pathname, encoding: "utf8" }),
  );
  rmSync(dir, { recursive: true, force: true });
  return rss;
}
