// The sidecar's figures, each taken from a real `egress-agent start` process (and a real beacon process).
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Outbox } from "../src/sidecar/storage/outbox.ts";
import { testLicense, traceTransaction } from "../test/helpers/fixtures.ts";
import { agentConfig, beaconConfig, getJson, startAgentProcess, startBeacon, type ServiceProcess } from "../test/helpers/processes.ts";
import { cpuSeconds, peakRss, postAll, rss, sleep } from "./measure.ts";
import { OTLP_POINTS, OTLP_REQUESTS } from "./workloads.ts";

const license = testLicense();
const NOWHERE = "http://127.0.0.1:9";
/** The instance keeps posting while the beacon is away: nothing drains, every byte is intake. */
const outageSettings = { intervals: { flush: "1h" }, retry: { minBackoff: "1s", maxBackoff: "5m", requestTimeout: "5s" } };

async function withBeacon<T>(work: (beacon: ServiceProcess, dataDir: string) => Promise<T>): Promise<T> {
  const fixture = beaconConfig([license]);
  const beacon = await startBeacon(fixture);
  try {
    return await work(beacon, fixture.dataDir);
  } finally {
    await beacon.stop();
  }
}

async function timedStart(beaconUrl: string, extra: Record<string, unknown> = {}, dir?: string) {
  const started = performance.now();
  const agent = await startAgentProcess(agentConfig(beaconUrl, extra, dir), { PLATFORM_LICENSE_KEY: license.key });
  const ready = (await fetch(`${agent.url}/readyz`)).ok;
  if (!ready) throw new Error("sidecar listening but not ready");
  return { agent, startMs: performance.now() - started };
}

/** Seconds to accept `bodies` on POST /v1/transactions, and the process's peak RSS. */
export async function ingest(bodies: readonly string[]): Promise<{ seconds: number; peakRss: number }> {
  const { agent } = await timedStart(NOWHERE, outageSettings);
  try {
    const seconds = await postAll(`${agent.url}/v1/transactions`, bodies);
    return { seconds, peakRss: peakRss(agent.child.pid!) };
  } finally {
    await agent.stop();
  }
}

export interface RelayRun {
  seconds: number;
  intakeSeconds: number;
  /** The sidecar's user + system CPU seconds from the first POST until the beacon held every point. */
  cpuSeconds: number;
  /** The beacon's CPU seconds over the same time. */
  beaconCpuSeconds: number;
  peakRss: number;
}

/**
 * Seconds from the first POST /v1/metrics (as `contentType`) until the beacon has stored every data point, the
 * sidecar's CPU over that time, and its peak RSS.
 */
export async function otlpRelay(bodies: readonly (string | Buffer)[], contentType: string): Promise<RelayRun> {
  return withBeacon(async (beacon, beaconData) => {
    const { agent } = await timedStart(beacon.url, { selfTelemetry: { enabled: false } });
    const db = () => new Database(join(beaconData, "beacon.db"), { readonly: true });
    try {
      const pid = agent.child.pid!;
      const cpuBefore = cpuSeconds(pid);
      const beaconCpuBefore = cpuSeconds(beacon.child.pid!);
      const started = performance.now();
      const intakeSeconds = await postAll(`${agent.url}/v1/metrics`, bodies, { "content-type": contentType });
      const expected = OTLP_REQUESTS * OTLP_POINTS;
      for (;;) {
        const reader = db();
        const { points } = reader
          .prepare("SELECT coalesce(sum(item_count), 0) AS points FROM otlp_batches WHERE signal = 'metrics'")
          .get() as { points: number };
        reader.close();
        if (points >= expected) break;
        await sleep(20);
      }
      const seconds = (performance.now() - started) / 1000;
      const beaconCpuSeconds = cpuSeconds(beacon.child.pid!) - beaconCpuBefore;
      return { seconds, intakeSeconds, cpuSeconds: cpuSeconds(pid) - cpuBefore, beaconCpuSeconds, peakRss: peakRss(pid) };
    } finally {
      await agent.stop();
    }
  });
}

/** Fills an outbox with `count` billing records directly (not the figure under test). */
function fillOutbox(dataDir: string, count: number): void {
  const outbox = new Outbox(dataDir);
  const template = traceTransaction();
  for (let done = 0; done < count; done += 10_000) {
    const records = Array.from({ length: Math.min(10_000, count - done) }, () => {
      const id = randomUUID();
      return { recordId: id, body: JSON.stringify({ ...template, id, session_id: randomUUID() }) };
    });
    outbox.enqueue("billing", records);
  }
  outbox.close();
}

/** A sidecar started on `count` buffered transactions: seconds until the beacon holds them all, start-up, both peak RSS. */
export async function drain(
  count: number,
): Promise<{ seconds: number; startMs: number; peakRss: number; cpuSeconds: number; beaconCpuSeconds: number; beaconPeakRss: number }> {
  const fixture = agentConfig(NOWHERE);
  fillOutbox(fixture.dataDir, count);
  return withBeacon(async (beacon, beaconData) => {
    const { agent, startMs } = await timedStart(beacon.url, {}, fixture.dir);
    const cpuBefore = cpuSeconds(agent.child.pid!);
    const beaconCpuBefore = cpuSeconds(beacon.child.pid!);
    const started = performance.now();
    const reader = new Database(join(beaconData, "beacon.db"), { readonly: true, fileMustExist: false });
    try {
      for (;;) {
        // The beacon only appends, so the last seq is the row count, read without a scan that would slow the drain.
        const { n } = reader.prepare("SELECT coalesce(max(seq), 0) AS n FROM trace_transactions").get() as { n: number };
        if (n >= count) break;
        await sleep(200);
      }
      return {
        seconds: (performance.now() - started) / 1000,
        startMs,
        peakRss: peakRss(agent.child.pid!),
        cpuSeconds: cpuSeconds(agent.child.pid!) - cpuBefore,
        beaconCpuSeconds: cpuSeconds(beacon.child.pid!) - beaconCpuBefore,
        beaconPeakRss: peakRss(beacon.child.pid!),
      };
    } finally {
      reader.close();
      await agent.stop();
    }
  });
}

/** Start-up to ready (median of `runs`), then RSS and CPU seconds of an idle sidecar over `idleSeconds`. */
export async function idle(runs: number, idleSeconds: number): Promise<{ startMs: number[]; rss: number; cpuSeconds: number }> {
  return withBeacon(async (beacon) => {
    const startMs: number[] = [];
    for (let i = 0; i < runs; i++) {
      const { agent, startMs: ms } = await timedStart(beacon.url);
      startMs.push(ms);
      await agent.stop();
    }
    // Defaults otherwise: own telemetry on, usage snapshots on, license checks on their schedule.
    const { agent } = await timedStart(beacon.url, { intervals: {}, retry: {} });
    try {
      await sleep(5_000);
      const pid = agent.child.pid!;
      const before = cpuSeconds(pid);
      await sleep(idleSeconds * 1000);
      const status = await getJson(`${agent.url}/v1/status`);
      if (status.license.state !== "valid") throw new Error(`idle sidecar's license is ${status.license.state}`);
      return { startMs, rss: rss(pid), cpuSeconds: cpuSeconds(pid) - before };
    } finally {
      await agent.stop();
    }
  });
}
