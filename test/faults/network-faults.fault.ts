import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { storedTransactions } from "../helpers/beacon-db.ts";
import { FaultProxy, type FaultAction, type SeenRequest } from "../helpers/fault-proxy.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { agentConfig, beaconConfig, getJson, startAgentProcess, startBeacon, waitFor, type ServiceProcess } from "../helpers/processes.ts";
import { accept, assertExactlyOnce, billingOnly, drained, INGEST, prng, scenarioSeed } from "./helpers/delivery.ts";

const REQUEST_TIMEOUT_MS = 1_500;
const retry = { minBackoff: "50ms", maxBackoff: "400ms", requestTimeout: `${REQUEST_TIMEOUT_MS}ms` };
/** Two readings of one machine's clock, in two processes: nothing here needs to be closer than this. */
const CLOCK_SLACK_MS = 50;

interface FaultKind {
  name: string;
  /** Connections refused at connect before the batch is sent. */
  refuse?: number;
  /** Actions for the batch's first sends, in order (a function when the action depends on the moment). */
  faults: (() => FaultAction)[];
  /** What the sidecar was sent for each send of the batch (0: no answer at all). */
  answered: number[];
  /** The beacon's inserted_count for each send it processed. */
  inserted: number[];
  /** num_failed_send_attempts the beacon keeps: that of the first copy it stored. */
  storedAttempts: number;
  check?: (sends: SeenRequest[]) => void;
}

const status = (code: number, headers?: Record<string, string>) => () => ({ status: code, headers });
let retryAfterDate = 0;

const kinds: FaultKind[] = [
  { name: "connection refused at connect, twice", refuse: 2, faults: [], answered: [200], inserted: [20], storedAttempts: 2 },
  {
    name: "reset mid-response after the beacon stored the batch",
    faults: [() => ({ fault: "reset-mid-response" })],
    answered: [200, 200],
    inserted: [20, 0],
    storedAttempts: 0,
  },
  ...[500, 502, 503, 504].map((code) => ({
    name: `${code}`,
    faults: [status(code)],
    answered: [code, 200],
    inserted: [20],
    storedAttempts: 1,
  })),
  { name: "429 without Retry-After", faults: [status(429)], answered: [429, 200], inserted: [20], storedAttempts: 1 },
  {
    name: "429 with Retry-After: 2 (seconds)",
    faults: [status(429, { "retry-after": "2" })],
    answered: [429, 200],
    inserted: [20],
    storedAttempts: 1,
    check: ([refused, retried]) =>
      assert.ok(retried!.at - refused!.at >= 2_000 - CLOCK_SLACK_MS, `retried ${retried!.at - refused!.at} ms after Retry-After: 2`),
  },
  {
    name: "503 with Retry-After as an HTTP date",
    faults: [
      () => {
        retryAfterDate = Date.now() + 2_000;
        return { status: 503, headers: { "retry-after": new Date(retryAfterDate).toUTCString() } };
      },
    ],
    answered: [503, 200],
    inserted: [20],
    storedAttempts: 1,
    // An HTTP date has whole seconds: the sidecar may go at the second the date names, not before.
    check: ([, retried]) =>
      assert.ok(retried!.at >= Math.floor(retryAfterDate / 1000) * 1000 - CLOCK_SLACK_MS, "no retry before the Retry-After date"),
  },
  {
    name: "hang past retry.requestTimeout",
    faults: [() => ({ fault: "hang" })],
    answered: [0, 200],
    inserted: [20],
    storedAttempts: 1,
    check: ([hung, retried]) => {
      assert.ok(hung!.abandonedAt !== undefined, "the sidecar gave up on the hanging request");
      const waited = hung!.abandonedAt - hung!.at;
      // The timeout starts as the request leaves, a little before the proxy has all of it.
      assert.ok(waited >= REQUEST_TIMEOUT_MS - 250, `gave up after ${waited} ms, before retry.requestTimeout (${REQUEST_TIMEOUT_MS} ms)`);
      assert.ok(retried!.at >= hung!.abandonedAt, "the retry comes after the timeout");
    },
  },
  {
    name: "200, then the connection drops before the body",
    faults: [() => ({ fault: "drop-after-200" })],
    answered: [200, 200],
    inserted: [20, 0],
    storedAttempts: 0,
  },
];

describe("network faults between sidecar and beacon", () => {
  const license = testLicense();
  const beaconFixture = beaconConfig([license]);
  let beacon: ServiceProcess;

  before(async () => {
    beacon = await startBeacon(beaconFixture);
  });
  after(async () => {
    await beacon.stop();
  });

  test("each fault kind in turn: retried as the fault demands, then delivered exactly once", async (t) => {
    const proxy = await FaultProxy.start(beacon.url);
    const agent = await startAgentProcess(agentConfig(proxy.url, { ...billingOnly, retry }), { PLATFORM_LICENSE_KEY: license.key });
    const accepted: string[] = [];
    try {
      await waitFor(async () => (await getJson(`${agent.url}/v1/status`)).license.state === "valid", 10_000, "license valid");
      for (const kind of kinds) {
        await t.test(kind.name, async () => {
          const batch = traceTransactions(20);
          const carries = (body: any) => body?.trace_transactions?.some((tx: { id: string }) => tx.id === batch[0]!.id);
          let injected = 0;
          proxy.decide = (path, body) =>
            path === INGEST && carries(body) && injected < kind.faults.length ? kind.faults[injected++]!() : { pass: true };
          if (kind.refuse) proxy.refuseConnections(kind.refuse);
          accepted.push(...(await accept(agent, batch)));
          await waitFor(async () => (await drained(agent.url)).completed === accepted.length, 15_000, "batch delivered");

          const sends = proxy.requests(INGEST).filter((r) => carries(r.body));
          assert.equal(
            proxy.refused.length,
            kinds.slice(0, kinds.indexOf(kind) + 1).reduce((n, k) => n + (k.refuse ?? 0), 0),
            "connections refused",
          );
          assert.deepEqual(
            sends.map((r) => r.answered),
            kind.answered,
            "what the sidecar was answered, send by send",
          );
          assert.deepEqual(
            sends.flatMap((r) => (r.upstream ? [r.upstream.body.inserted_count] : [])),
            kind.inserted,
            "the beacon's inserted_count, send by send",
          );
          const attempts = kind.refuse ?? 0;
          assert.deepEqual(
            sends.map((r) => r.body.trace_transactions[0].num_failed_send_attempts),
            kind.answered.map((_, i) => attempts + i),
            "each failed send is counted once",
          );
          const stored = storedTransactions(beaconFixture.dataDir);
          assert.deepEqual(
            new Set(batch.map((tx) => stored.get(tx.id))),
            new Set([kind.storedAttempts]),
            "stored once, with the first stored copy's count",
          );
          kind.check?.(sends);
        });
      }
      assertExactlyOnce({ beaconDataDir: beaconFixture.dataDir, accepted, proxy, billing: await drained(agent.url) });
    } finally {
      proxy.decide = () => ({ pass: true });
      assert.equal(await agent.stop(), 0);
      await proxy.close();
    }
  });

  test("a seeded random schedule of every fault kind under flowing traffic: delivered exactly once", async () => {
    const seed = scenarioSeed("random network faults", 20_260_611);
    const random = prng(seed);
    const ownFixture = beaconConfig([license]);
    const ownBeacon = await startBeacon(ownFixture);
    const proxy = await FaultProxy.start(ownBeacon.url);
    const actions: (() => FaultAction)[] = [
      () => ({ fault: "reset-mid-response" }),
      () => ({ fault: "drop-after-200" }),
      () => ({ fault: "hang" }),
      ...[500, 502, 503, 504, 429].map((code) => status(code)),
      status(503, { "retry-after": "1" }),
      status(429, { "retry-after": "1" }),
    ];
    proxy.decide = (path) =>
      path === INGEST && random() < 0.5
        ? actions[Math.floor(random() * actions.length)]!()
        : { pass: true, delayMs: Math.floor(random() * 20) };
    const agent = await startAgentProcess(
      agentConfig(proxy.url, { ...billingOnly, retry: { ...retry, requestTimeout: "800ms" }, limits: { batchTransactions: 40 } }),
      { PLATFORM_LICENSE_KEY: license.key },
    );
    const accepted: string[] = [];
    try {
      for (let i = 0; i < 24; i++) {
        const batch = traceTransactions(25);
        accepted.push(...(await accept(agent, batch)));
        // Batches at random moments: the traffic's shape, not a wait for anything.
        await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 80)));
      }
      const billing = await drained(agent.url, 60_000);
      const stored = assertExactlyOnce({ beaconDataDir: ownFixture.dataDir, accepted, proxy, billing });
      // Every send of a record carries the failed sends before it; the beacon keeps the count of the first copy it stored.
      const sends = new Map<string, { attempts: number; stored: boolean }[]>();
      for (const r of proxy.requests(INGEST)) {
        // The beacon stores the first copy it processes; later ones are skipped on the id.
        const processed = r.upstream?.status === 200;
        for (const tx of r.body.trace_transactions as { id: string; num_failed_send_attempts: number }[]) {
          sends.set(tx.id, [...(sends.get(tx.id) ?? []), { attempts: tx.num_failed_send_attempts, stored: processed }]);
        }
      }
      const faulted = proxy.requests(INGEST).filter((r) => r.answered !== 200 || r.fault).length;
      assert.ok(faulted >= 10, `the schedule injected ${faulted} faults`);
      for (const id of accepted) {
        const history = sends.get(id)!;
        assert.deepEqual(
          history.map((s) => s.attempts),
          history.map((_, i) => i),
          `record ${id}: each failed send counted once`,
        );
        assert.equal(
          stored.get(id),
          history.findIndex((s) => s.stored),
          `record ${id}: the beacon kept its first stored copy`,
        );
      }
    } finally {
      proxy.decide = () => ({ pass: true });
      assert.equal(await agent.stop(), 0);
      await proxy.close();
      await ownBeacon.stop();
    }
  });
});
