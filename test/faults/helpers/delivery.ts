import assert from "node:assert/strict";
import type { AgentStatus, StreamStatus } from "../../../src/protocol/local-api.ts";
import type { TraceTransaction } from "../../../src/protocol/trace-transaction.ts";
import { storedTransactions } from "../../helpers/beacon-db.ts";
import type { FaultProxy } from "../../helpers/fault-proxy.ts";
import { getJson, postJson, waitFor, type ServiceProcess } from "../../helpers/processes.ts";

export const INGEST = "/v1/beacon/ingest-traces";
export const VERIFY = "/v1/beacon/verify";

/** Sidecar config keys that leave billing alone on the wire: no telemetry relay, no own telemetry, no usage snapshots. */
export const billingOnly = {
  config: { telemetry: { logs: false, metrics: false, traces: false } },
  selfTelemetry: { enabled: false },
  usageReporting: false,
} as const;

/** A small seeded PRNG (mulberry32): the same seed gives the same schedule. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seed of a randomised scenario: FAULT_SEED when set (to replay a failure), else `fallback`; always logged. */
export function scenarioSeed(name: string, fallback: number): number {
  const seed = process.env.FAULT_SEED ? Number(process.env.FAULT_SEED) : fallback;
  console.log(`# ${name}: seed ${seed} (replay with FAULT_SEED=${seed})`);
  return seed;
}

/** Posts a batch to the sidecar's local API, expecting the 202 that says it is on disk; returns its ids. */
export async function accept(agent: ServiceProcess, batch: readonly TraceTransaction[]): Promise<string[]> {
  const response = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch });
  assert.equal(
    response.status,
    202,
    `POST /v1/transactions answered ${JSON.stringify(response.body)}; sidecar output:\n${agent.output().slice(-3_000)}`,
  );
  return batch.map((tx) => tx.id);
}

export async function billingStatus(agentUrl: string): Promise<StreamStatus> {
  return ((await getJson(`${agentUrl}/v1/status`)) as AgentStatus).streams.billing!;
}

/** Waits until the sidecar holds no billing record still to send (pending or sending); returns that status. */
export function drained(agentUrl: string, timeoutMs = 30_000): Promise<StreamStatus> {
  return waitFor(
    async () => {
      const billing = await billingStatus(agentUrl);
      return billing.pending + billing.sending === 0 ? billing : undefined;
    },
    timeoutMs,
    "billing drained",
  );
}

/**
 * The fault suite's exact check: the beacon's stored transactions (its own SQLite) are the accepted ids, each
 * once; the beacon's `inserted_count` answers add up to the same total (so no row was counted twice, and none
 * was sent around the proxy); and the sidecar holds nothing undelivered and no dead letter.
 */
export function assertExactlyOnce(options: {
  beaconDataDir: string;
  accepted: Iterable<string>;
  proxy: FaultProxy;
  billing: StreamStatus;
}): Map<string, number> {
  const accepted = new Set(options.accepted);
  const stored = storedTransactions(options.beaconDataDir);
  assert.equal(stored.size, accepted.size, "the beacon holds as many transactions as the sidecar accepted");
  const missing = [...accepted].filter((id) => !stored.has(id));
  assert.deepEqual(missing.slice(0, 5), [], `${missing.length} accepted transactions never reached the beacon`);
  assert.equal(options.proxy.insertedCount(), accepted.size, "the beacon's inserted_count answers add up to the accepted total");
  assert.equal(options.billing.pending + options.billing.sending, 0, "nothing left to send");
  assert.equal(options.billing.failed, 0, "no dead letters");
  assert.deepEqual(options.billing.deadLetters, []);
  return stored;
}
