import assert from "node:assert/strict";
import { test } from "node:test";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { storedTransactions } from "../helpers/beacon-db.ts";
import { FaultProxy, type SeenRequest } from "../helpers/fault-proxy.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { agentConfig, beaconConfig, postJson, startAgentProcess, startBeacon, waitFor, type AgentFixture } from "../helpers/processes.ts";
import { accept, assertExactlyOnce, billingOnly, drained, INGEST } from "./helpers/delivery.ts";

/** What one /readyz probe got while the sidecar stopped: a status, or 0 when the connection was refused. */
interface Probe {
  status: number;
  sendHeld: boolean;
}

/** Polls /readyz until the process exits, noting whether the held send was still waiting at each answer. */
async function probeUntilExit(
  url: string,
  held: SeenRequest,
  exited: Promise<number | null>,
  onStopping: () => Promise<void>,
): Promise<Probe[]> {
  let done = false;
  void exited.then(() => (done = true));
  const probes: Probe[] = [];
  while (!done) {
    const sendHeld = held.abandonedAt === undefined;
    const status = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1_000) }).then(
      (r) => r.status,
      () => 0,
    );
    probes.push({ status, sendHeld });
    if (status === 503 && probes.filter((p) => p.status === 503).length === 1) await onStopping();
    await new Promise((resolve) => setTimeout(resolve, 25)); // the probe's period
  }
  return probes;
}

/** The records of a stopped sidecar's outbox, read from its file: state counts and failed-send counts. */
function outboxAfterExit(fixture: AgentFixture) {
  const outbox = new Outbox(fixture.dataDir, { readonly: true });
  try {
    return { counts: outbox.stats.counts("billing"), attempts: new Set([...outbox.history.records("billing")].map((r) => r.attempts)) };
  } finally {
    outbox.close();
  }
}

test("SIGTERM while a send hangs: /readyz 503 and intake refused during the drain, exit 0 within 10 s, the batch back to pending and delivered once after restart", async (t) => {
  const license = testLicense();
  const env = { PLATFORM_LICENSE_KEY: license.key };
  const beaconFixture = beaconConfig([license]);
  const beacon = await startBeacon(beaconFixture);
  const proxy = await FaultProxy.start(beacon.url);
  let hold = true;
  proxy.decide = (path) => (path === INGEST && hold ? { fault: "hang" } : { pass: true });
  // The request timeout (30 s, the default) outlasts the drain grace (5 s): the shutdown cuts the send, not a timeout.
  const fixture = agentConfig(proxy.url, { ...billingOnly, retry: { minBackoff: "50ms", maxBackoff: "400ms", requestTimeout: "30s" } });
  const accepted: string[] = [];

  /** Posts a batch, waits until its send hangs at the proxy, sends SIGTERM and checks the stop; returns the held send. */
  async function stopDuringHeldSend(): Promise<SeenRequest> {
    hold = true;
    const agent = await startAgentProcess(fixture, env);
    const batch = traceTransactions(40);
    accepted.push(...(await accept(agent, batch)));
    const held = (await waitFor(async () => proxy.holding[0], 10_000, "a send held at the proxy"))!;

    const signalled = Date.now();
    const exited = agent.stop("SIGTERM");
    let lateAnswer: Awaited<ReturnType<typeof postJson>> | undefined;
    const probes = await probeUntilExit(agent.url, held, exited, async () => {
      // Intake while stopping: refused, and nothing of it kept.
      lateAnswer = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(5) });
    });
    const code = await exited;
    const took = Date.now() - signalled;

    assert.equal(code, 0, `exit code; output:\n${agent.output().slice(-3_000)}`);
    assert.ok(took < 10_000, `stopped in ${took} ms`);
    assert.ok(
      probes.some((p) => p.status === 503 && p.sendHeld),
      `/readyz answered 503 while the send was held: ${JSON.stringify(probes.slice(0, 5))}`,
    );
    const firstNotReady = probes.findIndex((p) => p.status !== 200);
    assert.ok(
      probes.slice(firstNotReady).every((p) => p.status !== 200),
      "never ready again once stopping",
    );
    assert.equal(lateAnswer?.status, 503, "intake refused while stopping");
    assert.equal(lateAnswer?.body.code, "EGRESS_ERR_STOPPING");
    assert.ok(
      held.abandonedAt !== undefined && held.abandonedAt - signalled >= 4_000,
      `the in-flight send got its drain grace (cut after ${held.abandonedAt! - signalled} ms)`,
    );

    const after = outboxAfterExit(fixture);
    assert.deepEqual(
      { pending: after.counts.pending, sending: after.counts.sending, completed: after.counts.completed },
      { pending: 40, sending: 0, completed: accepted.length - 40 },
      "the cut batch is pending again; the late batch was not kept",
    );
    assert.deepEqual(after.attempts, new Set([0]), "a send cut by the shutdown is not a failed attempt");
    return held;
  }

  async function restartAndDrain() {
    hold = false;
    const agent = await startAgentProcess(fixture, env);
    try {
      return await drained(agent.url, 15_000);
    } finally {
      assert.equal(await agent.stop(), 0);
    }
  }

  try {
    await t.test("the held request never reached the beacon", async () => {
      const held = await stopDuringHeldSend();
      assert.deepEqual(proxy.discardHeld(), [held]);
      await restartAndDrain();
      assert.deepEqual(
        [...storedTransactions(beaconFixture.dataDir).values()].every((n) => n === 0),
        true,
        "stored with no failed attempt",
      );
    });

    await t.test("the beacon did get the held request, after the sidecar had gone: the re-send counts nothing twice", async () => {
      const held = await stopDuringHeldSend();
      const [forwarded] = await proxy.forwardHeld();
      assert.equal(forwarded, held);
      assert.deepEqual(held.upstream, { status: 200, body: { inserted_count: 40 } }, "the beacon stored the held batch");
      const billing = await restartAndDrain();
      const resent = proxy.requests(INGEST).at(-1)!;
      assert.deepEqual(
        resent.body.trace_transactions.map((tx: { id: string }) => tx.id),
        held.body.trace_transactions.map((tx: { id: string }) => tx.id),
        "the same batch went again",
      );
      assert.deepEqual(resent.upstream, { status: 200, body: { inserted_count: 0 } }, "and the beacon kept it once");
      const stored = assertExactlyOnce({ beaconDataDir: beaconFixture.dataDir, accepted, proxy, billing });
      assert.ok(
        [...stored.values()].every((n) => n === 0),
        "no failed attempt recorded for either cut send",
      );
    });
  } finally {
    await proxy.close();
    await beacon.stop();
  }
});
