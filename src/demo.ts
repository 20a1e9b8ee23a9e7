import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Closers } from "./closers.ts";
import { EgressError } from "./errors.ts";
import pino from "pino";
import { stringify } from "yaml";
import { startAgent } from "./sidecar/daemon.ts";
import { loadBeaconConfig } from "./beacon/config.ts";
import { formatTraceReport } from "./beacon/report.ts";
import { startBeacon } from "./beacon/server.ts";
import { BeaconStore } from "./beacon/store.ts";
import { loadAgentConfig } from "./sidecar/config.ts";
import { LOCAL_ANSWER_CAP } from "./sidecar/commands/local-api-client.ts";
import { readCappedText } from "./http/capped-answer.ts";
import { describeStoredTelemetry, sampleTelemetry } from "./demo-telemetry.ts";
import { createLogger } from "./log.ts";
import type { AgentStatus, TransactionsAccepted } from "./protocol/local-api.ts";
import type { TraceTransaction } from "./protocol/trace-transaction.ts";

const DEMO_ORG = "6f1c8a52-3b7e-4c55-9a51-0d2f4e6b7a10";

/** Sample billing records: `n` transactions over the last hour, as an instance would report them. */
function sampleTransactions(n: number, now: number): TraceTransaction[] {
  const tenant = randomUUID();
  return Array.from({ length: n }, (_, i) => {
    const start = new Date(now - 3_600_000 + i * 1000).toISOString();
    const end = new Date(now - 3_600_000 + i * 1000 + 60_000).toISOString();
    return {
      id: randomUUID(),
      tenant_id: tenant,
      session_id: randomUUID(),
      trace_count: 1 + (i % 9),
      start_insertion_time: start,
      end_insertion_time: end,
      start_interval_time: start,
      end_interval_time: end,
      status: "completed",
      num_failed_send_attempts: 0,
      transaction_type: "traces",
      organization_id: DEMO_ORG,
    };
  });
}

/** The JSON answer of a local service the demo started (read within the local API's cap, as every answer is). */
async function answerOf(response: Response, url: string): Promise<unknown> {
  const text = await readCappedText(response, LOCAL_ANSWER_CAP, url);
  if (!response.ok) throw new EgressError("EGRESS_ERR_DEMO", `${url} answered ${response.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text);
}

async function postJson(url: string, body: unknown): Promise<unknown> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    redirect: "manual",
  });
  return answerOf(response, url);
}

/** Waits until the beacon holds the demo's metrics and logs; returns what it stored, one line each. */
async function waitForTelemetry(beaconDataDir: string, sent: ReturnType<typeof sampleTelemetry>, timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const store = new BeaconStore(beaconDataDir, { readonly: true });
    try {
      if (store.otlpBatches("metrics").length > 0 && store.otlpBatches("logs").length > 0) return describeStoredTelemetry(store, sent);
    } finally {
      store.close();
    }
    if (Date.now() > deadline) throw new EgressError("EGRESS_ERR_DEMO", "the demo's telemetry did not reach the beacon in time");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function postTransactions(url: string, transactions: TraceTransaction[]): Promise<TransactionsAccepted> {
  return (await postJson(`${url}/v1/transactions`, { trace_transactions: transactions })) as TransactionsAccepted;
}

async function waitForDelivery(url: string, timeoutMs: number): Promise<AgentStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = (await answerOf(await fetch(`${url}/v1/status`, { redirect: "manual" }), `${url}/v1/status`)) as AgentStatus;
    const billing = status.streams.billing!;
    if (billing.pending + billing.sending === 0) return status;
    if (Date.now() > deadline)
      throw new EgressError("EGRESS_ERR_DEMO", `not delivered within ${timeoutMs / 1000} s: ${JSON.stringify(billing)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A beacon knowing a generated license and a sidecar with its key, both on loopback, their files in `dir`. */
async function startPair(dir: string, licenseKey: string, closers: Closers) {
  writeFileSync(
    join(dir, "beacon.yaml"),
    stringify({
      listen: "127.0.0.1:0",
      dataDir: join(dir, "beacon"),
      logLevel: "info",
      licenses: [{ key: licenseKey, id: "demo-license", organizationId: DEMO_ORG, expiresAt: "2099-12-31T00:00:00Z", seats: 10 }],
    }),
  );
  const beaconConfig = loadBeaconConfig(join(dir, "beacon.yaml"));
  const beacon = await startBeacon(beaconConfig, { logger: createLogger("info", pino.destination(join(dir, "beacon.log"))) });
  closers.add(() => beacon.close());

  writeFileSync(
    join(dir, "egress.yaml"),
    stringify({ beaconUrl: beacon.url, listen: "127.0.0.1:0", dataDir: join(dir, "agent"), intervals: { flush: "200ms" } }),
  );
  const agentConfig = loadAgentConfig({ file: join(dir, "egress.yaml"), env: { PLATFORM_LICENSE_KEY: licenseKey } });
  const agent = await startAgent(agentConfig, {
    logger: createLogger("info", pino.destination(join(dir, "sidecar.log")), undefined, [licenseKey]),
  });
  closers.add(() => agent.close());
  return { beacon, beaconConfig, agent };
}

/** Sample billing records through the sidecar, a re-sent batch among them, until the beacon has them; its report. */
async function showBilling(agentUrl: string, beaconDataDir: string, count: number, out: (line?: string) => void): Promise<void> {
  const started = Date.now();
  const transactions = sampleTransactions(count, started);
  const half = Math.ceil(count / 2);
  const first = await postTransactions(agentUrl, transactions.slice(0, half));
  const second = await postTransactions(agentUrl, transactions.slice(half));
  // The instance retrying a batch it is unsure about: the sidecar keeps each id once.
  const retry = await postTransactions(agentUrl, transactions.slice(0, Math.min(50, half)));
  const traces = transactions.reduce((sum, t) => sum + t.trace_count, 0);
  out(`instance -> sidecar: ${count} trace transactions (${traces} traces) in 3 POSTs to /v1/transactions`);
  out(
    `  accepted ${first.accepted + second.accepted + retry.accepted}, of which ${first.duplicates + second.duplicates + retry.duplicates} were re-sent duplicates kept once`,
  );
  const status = await waitForDelivery(agentUrl, 30_000);
  const billing = status.streams.billing!;
  out(
    `sidecar -> beacon: ${billing.completed} delivered, ${billing.pending} pending, ${billing.failed} failed, in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  out(`  license ${status.license.state} (${status.license.licenseId}), token expires ${status.license.expiresAt}`);
  out();
  out("beacon ingested (egress-agent beacon report):");
  const store = new BeaconStore(beaconDataDir, { readonly: true });
  try {
    out(formatTraceReport(store.traceReport()).trimEnd());
  } finally {
    store.close();
  }
}

/**
 * `egress-agent demo`: a beacon and a sidecar on loopback with a generated license in a temporary
 * directory, sample billing records through the sidecar's local API, and the beacon's report of them; then
 * sample telemetry through the privacy filter, and an A2A conversation with the example agent server.
 */
export async function demo(options: { keep?: boolean; transactions: string }): Promise<void> {
  const count = Number(options.transactions);
  const dir = mkdtempSync(join(tmpdir(), "egress-demo-"));
  const out = (line = "") => process.stdout.write(`${line}\n`);
  const licenseKey = `lic-demo-${randomUUID()}`;
  // Closed in reverse, each even when one before it throws: the sidecar, the beacon, then the directory.
  const closers = new Closers();
  closers.add(() => (options.keep ? out(`\ndata, configs and logs kept in ${dir}`) : rmSync(dir, { recursive: true, force: true })));
  try {
    const { beacon, beaconConfig, agent } = await startPair(dir, licenseKey, closers);
    out("egress-agent demo: a local beacon and a local sidecar, talking over loopback");
    out(`  beacon   ${beacon.url}   license demo-license (generated key, never printed)`);
    out(`  sidecar  ${agent.url}   outbox ${join(dir, "agent", "outbox.db")}`);
    out();
    await showBilling(agent.url, beaconConfig.dataDir, count, out);

    const telemetry = sampleTelemetry(Date.now());
    await postJson(`${agent.url}/v1/metrics`, telemetry.metrics);
    await postJson(`${agent.url}/v1/logs`, telemetry.logs);
    out();
    out("instance -> sidecar: operational telemetry (OTLP), with a UUID in an endpoint, an e-mail, an IP, a host name");
    const stored = await waitForTelemetry(beaconConfig.dataDir, telemetry, 30_000);
    out("sidecar -> beacon, after the privacy filter:");
    for (const line of stored) out(line);
    out();
    // Loaded here, not with the CLI: the A2A schemas and client are the demo's and the agent server's alone.
    const { demoAgentServer } = await import("./demo-a2a.ts");
    await demoAgentServer({
      dir,
      sidecarUrl: agent.url,
      beaconDataDir: beaconConfig.dataDir,
      organizationId: DEMO_ORG,
      out,
      delivered: () => waitForDelivery(agent.url, 30_000),
    });
  } finally {
    await closers.closeAll();
  }
}
