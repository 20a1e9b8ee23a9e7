import assert from "node:assert/strict";
import { test } from "node:test";
import { FaultProxy } from "../helpers/fault-proxy.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { agentConfig, beaconConfig, startAgentProcess, startBeacon, waitFor, type ServiceProcess } from "../helpers/processes.ts";
import { assertExactlyOnce, billingOnly, drained, INGEST, prng, scenarioSeed } from "./helpers/delivery.ts";

const TOTAL = 100_000;
const BATCH = 500;
const KILLS = 20;
/** The instance's parallel posters: batches arriving together share a commit in the sidecar. */
const POSTERS = 2;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The instance side: posts every batch until it has a 202 for it, as a platform instance does. A post that fails
 * (the sidecar died under it) puts the batch back; posting waits while no sidecar runs.
 */
class Instance {
  readonly #bodies: string[];
  readonly #queue: number[];
  #url: string | undefined;
  acknowledged = 0;
  duplicates = 0;
  /** Answers other than 202 (a connection cut by a kill is not one). */
  readonly errors: string[] = [];

  constructor(bodies: string[]) {
    this.#bodies = bodies;
    this.#queue = bodies.map((_, i) => i);
  }

  set sidecar(url: string | undefined) {
    this.#url = url;
  }

  #stopped = false;

  get done(): boolean {
    return this.acknowledged === this.#bodies.length;
  }

  stop(): void {
    this.#stopped = true;
  }

  async #poster(): Promise<void> {
    while (!this.done && !this.#stopped) {
      const url = this.#url;
      const i = this.#queue.shift();
      if (url === undefined || i === undefined) {
        if (i !== undefined) this.#queue.unshift(i);
        await sleep(20); // an instance looks again a little later, as one that finds no sidecar does
        continue;
      }
      try {
        const response = await fetch(`${url}/v1/transactions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: this.#bodies[i],
        });
        const body = (await response.json()) as { duplicates?: number };
        if (response.status !== 202) {
          this.errors.push(`${response.status} ${JSON.stringify(body)}`);
          throw new Error(`answered ${response.status}`);
        }
        this.acknowledged++;
        this.duplicates += body.duplicates ?? 0;
      } catch {
        this.#queue.push(i); // not acknowledged: send it again to the next sidecar
        await sleep(20); // an instance's pause before it retries
      }
    }
  }

  run(): Promise<void> {
    return Promise.all(Array.from({ length: POSTERS }, () => this.#poster())).then(() => {});
  }
}

test(`${KILLS} kill -9 at random moments while ${TOTAL} transactions flow: the beacon ends with every one exactly once`, async () => {
  const random = prng(scenarioSeed("kill -9 under load", 90_210));
  const license = testLicense();
  const env = { PLATFORM_LICENSE_KEY: license.key };
  const beaconFixture = beaconConfig([license]);
  const beacon = await startBeacon(beaconFixture);
  // Slow ingest answers keep batches in flight, so kills land mid-send.
  const proxy = await FaultProxy.start(beacon.url, { keepBodies: false });
  proxy.decide = () => ({ pass: true, delayMs: 25 });
  const fixture = agentConfig(proxy.url, { ...billingOnly, limits: { batchTransactions: BATCH } });
  const batches = Array.from({ length: TOTAL / BATCH }, () => traceTransactions(BATCH));
  const accepted = batches.flatMap((batch) => batch.map((tx) => tx.id));
  const instance = new Instance(batches.map((batch) => JSON.stringify({ trace_transactions: batch })));
  batches.length = 0;
  const posting = instance.run();
  let midSend = 0;
  const deliveredAtKill: number[] = [];
  let agent: ServiceProcess | undefined;
  try {
    // Random moments of the flow: each kill comes once the beacon holds a random share of the total, after a random
    // extra while, so kills fall all along intake and delivery whatever the machine's speed.
    const killPoints = Array.from({ length: KILLS }, () => Math.floor(random() * 0.95 * TOTAL)).sort((a, b) => a - b);
    for (const point of killPoints) {
      agent = await startAgentProcess(fixture, env);
      instance.sidecar = agent.url;
      await waitFor(async () => proxy.insertedCount() >= point, 60_000, `${point} transactions delivered`);
      await sleep(50 + Math.floor(random() * 250));
      instance.sidecar = undefined;
      if (proxy.requests(INGEST).some((r) => r.answered === 0 && r.abandonedAt === undefined)) midSend++;
      deliveredAtKill.push(proxy.insertedCount());
      assert.equal(await agent.stop("SIGKILL"), null, "killed, not exited");
    }
    agent = await startAgentProcess(fixture, env);
    instance.sidecar = agent.url;
    await waitFor(async () => instance.done, 60_000, "every batch acknowledged");
    await posting;
    const billing = await drained(agent.url, 60_000);
    assert.equal(billing.completed, TOTAL, "the sidecar holds every transaction as delivered");

    const processed = proxy.requests(INGEST).filter((r) => r.upstream?.status === 200);
    const resent = processed.reduce((n, r) => n + r.records, 0) - TOTAL;
    console.log(`# kills at ${deliveredAtKill.join(", ")} delivered`);
    console.log(
      `# ${KILLS} kills, ${midSend} with a send in flight; ${resent} records re-sent and deduplicated; ${instance.duplicates} re-posted records kept once by the sidecar`,
    );
    assert.deepEqual(instance.errors, [], "the sidecar answered every post it lived through with 202");
    assertExactlyOnce({ beaconDataDir: beaconFixture.dataDir, accepted, proxy, billing });
    assert.ok(midSend > 0 && resent > 0, "some kills landed mid-send and their batches went again");
    assert.equal(await agent.stop(), 0, "the last sidecar stops cleanly");
  } finally {
    instance.stop();
    await agent?.stop("SIGKILL");
    await proxy.close();
    await beacon.stop();
  }
});
