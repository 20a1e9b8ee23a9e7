// npm run bench: figures beside their floors, measured in the same run. Prints; never asserts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import Fastify from "fastify";
import pino from "pino";
import { startAgent } from "../src/agent/daemon.ts";
import { loadAgentConfig } from "../src/config/agent-config.ts";
import { traceTransactions } from "../test/helpers/fixtures.ts";

const BATCH = 500;
const BATCHES = 100;
const CLIENTS = 8;
const batches = Array.from({ length: BATCHES }, () => JSON.stringify({ trace_transactions: traceTransactions(BATCH) }));
const total = BATCH * BATCHES;
const dir = mkdtempSync(join(tmpdir(), "egress-bench-"));

async function postAll(url: string): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < batches.length) {
        const body = batches[next++]!;
        const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
        await response.arrayBuffer();
      }
    }),
  );
  return total / ((performance.now() - started) / 1000);
}

function sqliteFloor(): number {
  const db = new Database(join(dir, "floor.db"));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec("CREATE TABLE t (seq INTEGER PRIMARY KEY, record_id TEXT UNIQUE, body TEXT)");
  const insert = db.prepare("INSERT INTO t (record_id, body) VALUES (?, ?)");
  const rows = batches.map((b) => (JSON.parse(b).trace_transactions as { id: string }[]).map((t) => [t.id, JSON.stringify(t)] as const));
  const started = performance.now();
  for (const batch of rows) db.transaction(() => batch.forEach(([id, body]) => insert.run(id, body)))();
  const rate = total / ((performance.now() - started) / 1000);
  db.close();
  return rate;
}

async function httpFloor(): Promise<number> {
  const app = Fastify({ bodyLimit: 64 * 1024 * 1024 });
  app.post("/", async (_request, reply) => reply.code(202).send({ ok: true }));
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as { port: number };
  const rate = await postAll(`http://127.0.0.1:${port}/`);
  await app.close();
  return rate;
}

async function sidecarIngest(): Promise<number> {
  const config = loadAgentConfig({ env: { PLATFORM_LICENSE_KEY: "lic-bench", BEACON_URL: "http://127.0.0.1:9" }, listen: "127.0.0.1:0" });
  const agent = await startAgent({ ...config, dataDir: join(dir, "agent"), intervals: { ...config.intervals, flush: 3_600_000 } }, { logger: pino({ level: "silent" }) });
  const rate = await postAll(`${agent.url}/v1/transactions`);
  await agent.stop();
  return rate;
}

const floorSqlite = sqliteFloor();
const floorHttp = await httpFloor();
const ingest = await sidecarIngest();
rmSync(dir, { recursive: true, force: true });

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
console.log(`ingest: ${total} trace transactions, batches of ${BATCH}, ${CLIENTS} concurrent clients, ${new Date().toISOString()}`);
console.log("| figure | transactions/s | vs floor |");
console.log("|---|---:|---:|");
console.log(`| floor: raw better-sqlite3 batched insert (WAL, synchronous FULL) | ${fmt(floorSqlite)} | 1.00 |`);
console.log(`| floor: loopback POST to an empty Fastify route | ${fmt(floorHttp)} | 1.00 |`);
console.log(`| sidecar POST /v1/transactions (validated, committed) | ${fmt(ingest)} | ${(ingest / floorSqlite).toFixed(2)} of SQLite, ${(ingest / floorHttp).toFixed(2)} of HTTP |`);
