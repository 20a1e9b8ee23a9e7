import assert from "node:assert/strict";
import { test } from "node:test";
import type { DestinationStream } from "pino";
import { startAgent } from "../../src/sidecar/daemon.ts";
import { loadAgentConfig } from "../../src/sidecar/config.ts";
import { createLogger } from "../../src/log.ts";
import type { AgentStatus } from "../../src/protocol/local-api.ts";
import { storedTransactions } from "../helpers/beacon-db.ts";
import { FaultProxy } from "../helpers/fault-proxy.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { agentConfig, beaconConfig, getJson, postJson, startBeacon, waitFor } from "../helpers/processes.ts";
import { assertExactlyOnce, billingOnly, drained } from "./helpers/delivery.ts";
import { fastClock, minutes } from "./helpers/fast-clock.ts";

/** One hour of the clock passes in 15 s. */
const RATE = 240;
const MAX_BACKOFF = minutes(5);
/**
 * The longest wait allowed between attempts: maxBackoff plus room for timers firing late on a loaded machine
 * (3 min of the clock = 0.75 s real). It still tells "capped" from "doubled": uncapped, the wait after 1 s doubled
 * nine times would be at least 512 s.
 */
const BACKOFF_BOUND = MAX_BACKOFF + minutes(3);

/** A status poll: the sidecar read its clock somewhere between `sent` and `at` (answered). */
interface Sample {
  sent: number;
  at: number;
  status: AgentStatus;
}

interface AuditEntry {
  at: string;
  stream: string;
  status: number | null;
}

/** States in order, repeats collapsed: what a user polling /v1/status saw. */
const transitions = (samples: Sample[]) =>
  samples.map((s) => s.status.license.state).filter((state, i, all) => i === 0 || all[i - 1] !== state);

test("a one-hour beacon outage on a fast clock: intake goes on, the license passes through grace, backoff stays capped, and everything is delivered once", async () => {
  const clock = fastClock(RATE);
  const license = testLicense();
  const beaconFixture = beaconConfig([license]);
  const beacon = await startBeacon(beaconFixture, clock.env); // tokens for 1 h of the same fast clock
  const proxy = await FaultProxy.start(beacon.url, { now: clock.now });
  // The clock is fast and the shippers' timers real: their waits are given in real ms (clock ms / RATE): backoff
  // 1 s..5 min (its floor also spaces license rounds on the clock, 4 clock-ms here), and a flush window short either
  // way. The license schedules on the clock (30 min after a verification, 5 min before the token expires) and waits
  // through the clock's own setTimeout, so a starved process that ends a round late still waits the rest of the 30
  // minutes. What the sidecar compares on the clock (grace, log summaries, token expiry, ages) stays as it is.
  const fixture = agentConfig(proxy.url, {
    ...billingOnly,
    intervals: { flush: "20ms", licenseVerify: "30m" },
    retry: { minBackoff: `${Math.round(clock.real(1_000))}ms`, maxBackoff: `${clock.real(MAX_BACKOFF)}ms`, requestTimeout: "5s" },
  });
  const config = loadAgentConfig({ file: fixture.configPath, env: { PLATFORM_LICENSE_KEY: license.key } });
  const logLines: { msg: string; stream?: string }[] = [];
  const destination: DestinationStream = { write: (line: string) => void logLines.push(JSON.parse(line)) };
  const agent = await startAgent(config, { logger: createLogger("info", destination), now: clock.now, setClockTimeout: clock.setTimeout });

  const accepted: string[] = [];
  const answers = new Set<number>();
  const samples: Sample[] = [];
  let running = true;
  // The instance posts a batch every minute of the clock; a user watches /v1/status every 100 ms (24 s of the clock).
  const instance = (async () => {
    while (running) {
      const batch = traceTransactions(40);
      const { status } = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch });
      answers.add(status);
      if (status === 202) accepted.push(...batch.map((tx) => tx.id));
      await new Promise((resolve) => setTimeout(resolve, clock.real(minutes(1))));
    }
  })();
  let watching = false;
  const watcher = (async () => {
    await waitFor(async () => watching || !running, 20_000, "the first verification");
    while (running) {
      const sent = clock.now();
      const status = await getJson(`${agent.url}/v1/status`);
      samples.push({ sent, at: clock.now(), status });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  const until = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, clock.real(at - clock.now()))));

  try {
    const first = (await waitFor(
      async () => {
        const s = (await getJson(`${agent.url}/v1/status`)) as AgentStatus;
        return s.license.state === "valid" && s.streams.billing!.completed > 0 ? s : undefined;
      },
      10_000,
      "license valid and first delivery",
    )) as AgentStatus;
    watching = true;
    const verifiedAt = Date.parse(first.license.verifiedAt!);
    const tokenExpiry = Date.parse(first.license.expiresAt!);
    assert.ok(Math.abs(tokenExpiry - verifiedAt - minutes(60)) < minutes(2), "the beacon's token lasts an hour of the shared clock");

    // The beacon goes away 10 minutes after the verification: the token expires 50 minutes into the outage.
    await until(verifiedAt + minutes(10));
    const outageStart = clock.now();
    proxy.refuseConnections();
    const storedBefore = storedTransactions(beaconFixture.dataDir).size;
    await until(outageStart + minutes(59));

    const late = (await getJson(`${agent.url}/v1/status`)) as AgentStatus;
    const lateBilling = late.streams.billing!;
    assert.equal(storedTransactions(beaconFixture.dataDir).size, storedBefore, "nothing reached the beacon during the outage");
    assert.equal(lateBilling.pending + lateBilling.sending, accepted.length - storedBefore, "every transaction accepted meanwhile is held");
    assert.ok(
      lateBilling.oldestPendingAgeSeconds! >= 55 * 60 && lateBilling.oldestPendingAgeSeconds! <= 62 * 60,
      `oldest pending ${lateBilling.oldestPendingAgeSeconds} s`,
    );
    const gauge = Number(
      /egress_outbox_oldest_pending_age_seconds\{stream="billing"\} (\S+)/.exec(await (await fetch(`${agent.url}/metrics`)).text())![1],
    );
    assert.ok(
      Math.abs(gauge - lateBilling.oldestPendingAgeSeconds!) < 180,
      `/metrics says the oldest record waited ${gauge} s, status ${lateBilling.oldestPendingAgeSeconds} s`,
    );
    assert.equal(late.license.state, "grace", "past the token's expiry, within license.gracePeriod");
    assert.equal(late.license.verifiedAt, first.license.verifiedAt, "grace counts from the last good verification");
    assert.match(late.license.lastError ?? "", /unreachable/);

    await until(outageStart + minutes(60));
    const outageEnd = clock.now();
    proxy.acceptConnections();
    await until(outageEnd + minutes(5));
    running = false;
    await Promise.all([instance, watcher]);
    const billing = await drained(agent.url);
    await waitFor(async () => (await getJson(`${agent.url}/v1/status`)).license.state === "valid", 10_000, "license valid again");

    assert.deepEqual([...answers], [202], "intake never refused, whatever the license state");
    const stored = assertExactlyOnce({ beaconDataDir: beaconFixture.dataDir, accepted, proxy, billing });

    // License: valid until the token expired, grace from then on, valid again once the beacon answered.
    const finalSent = clock.now();
    const final = (await getJson(`${agent.url}/v1/status`)) as AgentStatus;
    samples.push({ sent: finalSent, at: clock.now(), status: final });
    assert.deepEqual(transitions(samples), ["valid", "grace", "valid"]);
    const firstGrace = samples.find((s) => s.status.license.state === "grace")!;
    // A poll sent a moment before the expiry may be answered after it (the clock runs 240 times real time): grace may not
    // show in an answer before the expiry, and must show in a poll sent within 2 minutes after it.
    assert.ok(
      firstGrace.at >= tokenExpiry && firstGrace.sent - tokenExpiry < minutes(2),
      `grace seen in a poll sent ${(firstGrace.sent - tokenExpiry) / 1000} s and answered ${(firstGrace.at - tokenExpiry) / 1000} s after the token expired`,
    );
    const backToValid = samples.find((s) => s.at > firstGrace.at && s.status.license.state === "valid")!;
    assert.ok(
      backToValid.at >= outageEnd && backToValid.sent - outageEnd < 2 * MAX_BACKOFF,
      `valid again ${(backToValid.sent - outageEnd) / 1000} s after the outage`,
    );

    // Backoff during the hour, from the sidecar's audit log: capped at maxBackoff, never a flood, never given up.
    const audit = (await getJson(`${agent.url}/v1/audit?since=${new Date(outageStart).toISOString()}&limit=1000`)) as {
      entries: AuditEntry[];
    };
    const failed = audit.entries.filter((e) => e.status === null && Date.parse(e.at) <= outageEnd);
    for (const stream of ["billing", "license"]) {
      const times = failed.filter((e) => e.stream === stream).map((e) => Date.parse(e.at));
      const bounds = [outageStart, ...times, outageEnd];
      const gaps = bounds.slice(1).map((t, i) => t - bounds[i]!);
      assert.ok(times.length >= 8 && times.length <= 40, `${stream}: ${times.length} attempts in the hour`);
      // The license's first attempt is its scheduled verification (30 minutes after the last, 20 into the outage);
      // after that, and for billing throughout, no wait over the cap.
      const waits = gaps.slice(stream === "license" ? 1 : 0);
      assert.ok(Math.max(...waits) <= BACKOFF_BOUND, `${stream}: longest wait ${Math.max(...waits) / 1000} s`);
    }
    assert.equal(
      proxy.refused.length,
      audit.entries.filter((e) => e.status === null).length,
      "each refused connection is one failed attempt in the audit log",
    );
    // Every refused send, also one refused between the outage's end being noted and the proxy taking connections again.
    const billingFailures = audit.entries.filter((e) => e.status === null && e.stream === "billing").length;
    assert.equal(Math.max(...stored.values()), billingFailures, "the batch that waited out the hour carries its failed sends");

    const health = logLines.filter((l) => l.stream === "billing");
    assert.equal(health.filter((l) => l.msg === "stream failing").length, 1, "one warning when billing starts failing");
    const summaries = health.filter((l) => l.msg === "stream still failing").length;
    assert.ok(summaries >= 3 && summaries <= 6, `${summaries} summaries in the hour (at most one per 10 minutes)`);
    assert.equal(health.filter((l) => l.msg === "stream recovered").length, 1, "one line when it recovers");
  } finally {
    running = false;
    await Promise.all([instance, watcher]).catch(() => {});
    await agent.close();
    await proxy.close();
    await beacon.stop();
  }
});
