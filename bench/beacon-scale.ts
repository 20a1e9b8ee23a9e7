// The beacon on PostgreSQL: ingest through one replica and through two (real `egress-agent beacon` processes on one
// database), beside the floor of the same rows inserted straight into the same table, all in the same run.
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pino from "pino";
import { PostgresBeaconStorage } from "../src/beacon/store-postgres.ts";
import { openPool } from "../src/pg-pool.ts";
import type { TraceTransaction } from "../src/protocol/trace-transaction.ts";
import { testLicense, traceTransactions } from "../test/helpers/fixtures.ts";
import { freshDatabase } from "../test/helpers/postgres.ts";
import { beaconConfig, postJson, startBeacon, tempDir } from "../test/helpers/processes.ts";
import { CLIENTS, postAll } from "./measure.ts";
import { BATCH } from "./workloads.ts";

/** Batches of BATCH transactions for the beacon's ingest route, and the same rows for the floor. */
export function beaconIngestLoad(batches: number) {
  const license = testLicense({ id: "bench-license" });
  const rows = Array.from({ length: batches }, () => traceTransactions(BATCH));
  const bodies = rows.map((transactions) => JSON.stringify({ license: license.key, trace_transactions: transactions }));
  return { license, rows, bodies };
}

/** The beacon's columns after id and license_id, in the order of its table. */
const COLUMNS = [
  "organization_id",
  "tenant_id",
  "session_id",
  "trace_count",
  "start_insertion_time",
  "end_insertion_time",
  "start_interval_time",
  "end_interval_time",
  "status",
  "num_failed_send_attempts",
  "transaction_type",
] as const;
const TYPES = ["text", "text", "text", "bigint", "text", "text", "text", "text", "text", "integer", "text"];

/** A plain multi-row INSERT of one batch (no ON CONFLICT): $1 ids, $2 the license, $3.. the columns, then received_at. */
const FLOOR_INSERT = `INSERT INTO trace_transactions (id, license_id, ${COLUMNS.join(", ")}, received_at)
  SELECT u.id, $2, ${COLUMNS.map((c) => `u.${c}`).join(", ")}, $${COLUMNS.length + 3}
  FROM unnest($1::uuid[], ${TYPES.map((type, i) => `$${i + 3}::${type}[]`).join(", ")}) AS u (id, ${COLUMNS.join(", ")})`;

/**
 * Seconds to insert the rows into the beacon's own table (made by the beacon's migration) with CLIENTS connections,
 * one multi-row INSERT and commit per batch: what PostgreSQL takes, with no HTTP, validation or dedup around it.
 */
export async function postgresInsertSeconds(rows: readonly TraceTransaction[][]): Promise<number> {
  const database = await freshDatabase("egress_bench_floor");
  try {
    await (await PostgresBeaconStorage.open({ url: database.url, poolSize: 1 })).close();
    // Guarded like every pool of the product (src/pg-pool.ts): dropping the database ends its idle connections.
    const pool = openPool({ url: database.url, max: CLIENTS }, pino({ level: "silent" }), "bench floor");
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < rows.length) {
          const batch = rows[next++]!;
          const columns = COLUMNS.map((key) => batch.map((t) => t[key]));
          await pool.query(FLOOR_INSERT, [batch.map((t) => t.id), "bench-license", ...columns, new Date().toISOString()]);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    await pool.end();
    return seconds;
  } finally {
    await database.drop();
  }
}

/** Seconds for `replicas` beacon processes on one fresh database to ingest `bodies`, the clients spread over them. */
export async function beaconReplicasSeconds(replicas: number, load: ReturnType<typeof beaconIngestLoad>): Promise<number> {
  const database = await freshDatabase("egress_bench_replicas");
  const keyFile = join(tempDir("bench-key-"), "signing-key.pem");
  writeFileSync(keyFile, generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }));
  const started = [];
  try {
    for (let i = 0; i < replicas; i++) {
      const fixture = beaconConfig([load.license], { signingKeyFile: keyFile });
      started.push(await startBeacon(fixture, { BEACON_DATABASE_URL: database.url }));
    }
    // As a sidecar sends them: with the license's token (anonymous ingests have a small budget of their own).
    const { token } = (await postJson(`${started[0]!.url}/v1/beacon/verify`, { license: load.license.key })).body as { token: string };
    return await postAll(
      started.map((beacon) => `${beacon.url}/v1/beacon/ingest-traces`),
      load.bodies,
      { authorization: `Bearer ${token}` },
    );
  } finally {
    for (const beacon of started) await beacon.stop();
    await database.drop();
  }
}
