// npm run bench: figures beside their floors, measured in the same run. Prints; never asserts.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import Fastify from "fastify";
import pino from "pino";
import { startAgent } from "../src/agent/daemon.ts";
import { loadAgentConfig } from "../src/config/agent-config.ts";
import { metricsRequest, traceTransactions } from "../test/helpers/fixtures.ts";

const BATCH = 500;
const BATCHES = 100;
const CLIENTS = 8;
const batches = Array.from({ length: BATCHES }, () => JSON.stringify({ trace_transactions: traceTransactions(BATCH) }));
const total = BATCH * BATCHES;
const dir = mkdtempSync(join(tmpdir(), "egress-bench-"));

/** POSTs every body with CLIENTS concurrent clients; returns items per second (`itemsPerBody` each). */
async function postAll(url: string, bodies: readonly string[] = batches, itemsPerBody = BATCH): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body });
        await response.arrayBuffer();
      }
    }),
  );
  return (bodies.length * itemsPerBody) / ((performance.now() - started) / 1000);
}

// OTLP: export requests of 100 gauge points, each with the three allowlisted attributes, two that the
// privacy filter drops, and an endpoint it must template.
const OTLP_POINTS = 100;
const OTLP_REQUESTS = 400;
const otlpBodies = Array.from({ length: OTLP_REQUESTS }, (_, r) => {
  const request = metricsRequest();
  const gauge = request.resourceMetrics[0]!.scopeMetrics[0]!.metrics[0]!.gauge!;
  const point = gauge.dataPoints[0]!;
  gauge.dataPoints = Array.from({ length: OTLP_POINTS }, (_, i) => ({
    ...point,
    attributes: [
      { key: "endpoint", value: { stringValue: `/threads/${randomUUID()}/runs/${r * OTLP_POINTS + i}` } },
      { key: "method", value: { stringValue: "POST" } },
      { key: "service_name", value: { stringValue: "backend" } },
      { key: "user.email", value: { stringValue: `user${i}@example.com` } },
      { key: "http.url", value: { stringValue: `https://api.example.com/x?token=${randomUUID()}` } },
    ],
  }));
  return JSON.stringify(request);
});

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

async function httpFloorOtlp(): Promise<number> {
  const app = Fastify({ bodyLimit: 64 * 1024 * 1024 });
  app.post("/", async () => ({}));
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as { port: number };
  const rate = await postAll(`http://127.0.0.1:${port}/`, otlpBodies, OTLP_POINTS);
  await app.close();
  return rate;
}

async function sidecarIngest(): Promise<{ transactions: number; otlp: number }> {
  const config = loadAgentConfig({ env: { PLATFORM_LICENSE_KEY: "lic-bench", BEACON_URL: "http://127.0.0.1:9" }, listen: "127.0.0.1:0" });
  const agent = await startAgent({ ...config, dataDir: join(dir, "agent"), intervals: { ...config.intervals, flush: 3_600_000 } }, { logger: pino({ level: "silent" }) });
  const transactions = await postAll(`${agent.url}/v1/transactions`);
  const otlp = await postAll(`${agent.url}/v1/metrics`, otlpBodies, OTLP_POINTS);
  await agent.stop();
  return { transactions, otlp };
}

const floorSqlite = sqliteFloor();
const floorHttp = await httpFloor();
const floorHttpOtlp = await httpFloorOtlp();
const { transactions: ingest, otlp } = await sidecarIngest();
rmSync(dir, { recursive: true, force: true });

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
console.log(`ingest: ${total} trace transactions, batches of ${BATCH}, ${CLIENTS} concurrent clients, ${new Date().toISOString()}`);
console.log("| figure | transactions/s | vs floor |");
console.log("|---|---:|---:|");
console.log(`| floor: raw better-sqlite3 batched insert (WAL, synchronous FULL) | ${fmt(floorSqlite)} | 1.00 |`);
console.log(`| floor: loopback POST to an empty Fastify route | ${fmt(floorHttp)} | 1.00 |`);
console.log(`| sidecar POST /v1/transactions (validated, committed) | ${fmt(ingest)} | ${(ingest / floorSqlite).toFixed(2)} of SQLite, ${(ingest / floorHttp).toFixed(2)} of HTTP |`);
console.log("");
console.log(`otlp: ${OTLP_REQUESTS} metrics export requests (JSON) of ${OTLP_POINTS} data points, ${CLIENTS} concurrent clients`);
console.log("| figure | data points/s | vs floor |");
console.log("|---|---:|---:|");
console.log(`| floor: loopback POST of the same bodies to an empty Fastify route | ${fmt(floorHttpOtlp)} | 1.00 |`);
console.log(`| sidecar POST /v1/metrics (decoded, validated, filtered, committed) | ${fmt(otlp)} | ${(otlp / floorHttpOtlp).toFixed(2)} of HTTP |`);
