import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { logsRequest, metricsRequest, testLicense, traceTransactions, tracesRequest, usageMeasures } from "../helpers/fixtures.ts";
import {
  agentConfig,
  beaconConfig,
  postJson,
  startAgentProcess,
  startBeacon,
  waitFor,
  type AgentFixture,
  type BeaconFixture,
  type ServiceProcess,
} from "../helpers/processes.ts";
import { beaconStored } from "./harness.ts";

// One slow large body on each route of the real beacon and the real sidecar while valid billing and verify requests
// flow: a body holds in its budget only the bytes it has sent, never the Content-Length it declares, and billing
// and verify have budgets (and, at the beacon, connections) that telemetry and anonymous bodies cannot take. Small
// budgets keep it quick: a slow body declaring the whole body limit would, if reserved up front, hold 16 times the
// room of its class.

const KiB = 1024;
const BODY_LIMIT = 1024 * KiB;
const BUDGET = 64 * KiB;
/** The beacon's verify body limit (src/beacon/routes.ts), and the verify budget here: one body of it fills it. */
const VERIFY_LIMIT = 4 * KiB;
/** What a slow body sends at once before it trickles: enough that what it holds can be measured. */
const FIRST_BYTES = 1000;
/** http.bodyIdleTimeout of both: long enough for a slow-body test's traffic, short enough to watch a stall cut off. */
const IDLE_TIMEOUT_MS = 5_000;

const license = testLicense();

/** A request whose body declares `declared` bytes, sends FIRST_BYTES, then one byte every 50 ms until paused. */
async function slowBody(url: string, path: string, declared: number, headers: Record<string, string>) {
  const { hostname, port } = new URL(url);
  const socket: Socket = connect(Number(port), hostname);
  socket.on("error", () => {});
  let answer = "";
  socket.on("data", (chunk) => (answer += chunk));
  await new Promise((resolve) => socket.once("connect", resolve));
  const head = Object.entries({ "content-type": "application/json", ...headers, "content-length": String(declared) })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\n${head}\r\n`);
  let sent = FIRST_BYTES;
  socket.write(`{"padding":"${"x".repeat(FIRST_BYTES - 12)}`);
  const timer = setInterval(() => {
    sent++;
    socket.write("x");
  }, 50);
  return {
    /** Body bytes sent so far (once paused: all the server can hold). */
    sent: () => sent,
    /** What the server answered, if anything, before the body was done. */
    answer: () => answer,
    pause: () => clearInterval(timer),
    close: () => {
      clearInterval(timer);
      socket.destroy();
    },
  };
}

/**
 * Sends a request's headers (declaring `declared` body bytes) and not one byte of its body; resolves with the head
 * of the answer once the server has answered and closed the connection (or after 5 s).
 */
async function headersOnly(url: string, path: string, declared: number, headers: Record<string, string>) {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let answer = "";
  socket.on("data", (chunk) => (answer += chunk));
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\n${extra}Content-Length: ${declared}\r\n\r\n`,
  );
  const closedByServer = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 5_000);
    socket.on("error", () => {});
    socket.once("end", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
  socket.destroy();
  return { head: answer.split("\r\n\r\n", 1)[0]!, closedByServer };
}

/** `count` requests, four at a time; the statuses. */
async function traffic(count: number, send: () => Promise<number>): Promise<number[]> {
  const statuses: number[] = [];
  const worker = async () => {
    while (statuses.length < count) {
      const i = statuses.push(0) - 1;
      statuses[i] = await send().catch(() => 0);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return statuses;
}

/** A JSON body of exactly `size` bytes of this shape (a `padding` string added to it). */
function sized(fields: Record<string, unknown>, size: number): string {
  const base = JSON.stringify({ ...fields, padding: "" });
  return `${base.slice(0, -2)}${"x".repeat(size - base.length)}"}`;
}

const share = (statuses: number[], ok: number) => statuses.filter((s) => s === ok).length / statuses.length;

describe("slow bodies: a slow client holds only what it sent, and billing and verify keep being served", () => {
  let beaconFixture: BeaconFixture;
  let beacon: ServiceProcess;
  let agentFixture: AgentFixture;
  let agent: ServiceProcess;
  let bearer: Record<string, string>;
  const billing: number[] = [];
  const verifies: number[] = [];
  let intake: number[] = [];

  before(async () => {
    beaconFixture = beaconConfig([license], {
      bodyLimit: "1MiB",
      http: {
        bodyBytesInFlight: BUDGET,
        billingBodyBytesInFlight: BUDGET,
        anonymousBodyBytesInFlight: BUDGET,
        verifyBodyBytesInFlight: VERIFY_LIMIT,
        bodyIdleTimeout: IDLE_TIMEOUT_MS,
      },
    });
    beacon = await startBeacon(beaconFixture);
    agentFixture = agentConfig(beacon.url, {
      limits: { bodyLimit: "1MiB" },
      http: { bodyBytesInFlight: BUDGET, billingBodyBytesInFlight: BUDGET, bodyIdleTimeout: IDLE_TIMEOUT_MS },
      selfTelemetry: { enabled: false },
    });
    agent = await startAgentProcess(agentFixture, { PLATFORM_LICENSE_KEY: license.key });
    bearer = { authorization: `Bearer ${(await postJson(`${beacon.url}/v1/beacon/verify`, { license: license.key })).body.token}` };
  });
  after(async () => {
    const codes = [await agent?.stop("SIGTERM"), await beacon?.stop("SIGTERM")];
    assert.deepEqual(codes, [0, 0], "both were still up and stopped cleanly");
    for (const service of [agent, beacon]) assert.ok(!service.output().includes('"msg":"request failed"'), "no request ended in a 500");
  });

  /** Body bytes the sidecar's budget holds now (its /metrics). */
  const held = async (budget: string) => {
    const text = await (await fetch(`${agent.url}/metrics`)).text();
    return Number(new RegExp(`^egress_http_body_bytes_in_flight\\{budget="${budget}"\\} (\\d+)`, "m").exec(text)?.[1]);
  };

  /** Valid billing (ingest with the token) and verify requests at the beacon while `slow` trickles; their statuses. */
  async function beaconTraffic() {
    const [ingests, verified] = await Promise.all([
      traffic(20, async () => {
        const body = { license: license.key, trace_transactions: traceTransactions(2) };
        return (await postJson(`${beacon.url}/v1/beacon/ingest-traces`, body, bearer)).status;
      }),
      traffic(8, async () => (await postJson(`${beacon.url}/v1/beacon/verify`, { license: license.key })).status),
    ]);
    billing.push(...ingests);
    verifies.push(...verified);
    return { ingests, verified };
  }

  /**
   * What a paused slow body holds at the beacon, seen from outside: a body of its class that fits beside `sent`
   * bytes is taken (any answer but 503), one 512 bytes too many is refused with 503.
   */
  async function assertHolds(sent: number, budget: number, probe: (size: number) => Promise<number>) {
    assert.notEqual(await probe(budget - sent - 512), 503, `a body fits beside the ${sent} bytes sent: it holds no more`);
    assert.equal(await probe(budget - sent + 512), 503, "and what it sent does count");
  }

  const anonymousIngest = (size: number) =>
    postJson(`${beacon.url}/v1/beacon/ingest-traces`, sized({ license: license.key, trace_transactions: [] }, size)).then((r) => r.status);
  const beaconRoutes: {
    name: string;
    path: string;
    declared: number;
    headers: Record<string, string>;
    budget: number;
    probe?: (size: number) => Promise<number>;
  }[] = [
    {
      name: "verify",
      path: "/v1/beacon/verify",
      declared: VERIFY_LIMIT,
      headers: {},
      budget: VERIFY_LIMIT,
      probe: async (size) => (await postJson(`${beacon.url}/v1/beacon/verify`, sized({ license: "not-a-key" }, size))).status,
    },
    {
      name: "ingest-traces, anonymous",
      path: "/v1/beacon/ingest-traces",
      declared: BODY_LIMIT,
      headers: {},
      budget: BUDGET,
      probe: anonymousIngest,
    },
    {
      name: "ingest-traces, with a valid token",
      path: "/v1/beacon/ingest-traces",
      declared: BODY_LIMIT,
      headers: {},
      budget: BUDGET,
    },
    {
      name: "usage-snapshot, anonymous",
      path: "/v1/beacon/usage-snapshot",
      declared: BODY_LIMIT,
      headers: {},
      budget: BUDGET,
      probe: anonymousIngest,
    },
    { name: "usage-snapshot, with a valid token", path: "/v1/beacon/usage-snapshot", declared: BODY_LIMIT, headers: {}, budget: BUDGET },
    { name: "OTLP metrics", path: "/v1/beacon/v1/metrics", declared: BODY_LIMIT, headers: {}, budget: BUDGET },
    { name: "OTLP traces", path: "/v1/beacon/v1/traces", declared: BODY_LIMIT, headers: {}, budget: BUDGET },
    { name: "OTLP logs", path: "/v1/beacon/v1/logs", declared: BODY_LIMIT, headers: {}, budget: BUDGET },
  ];

  for (const route of beaconRoutes) {
    test(`beacon, a slow body on ${route.name}`, async () => {
      const headers = route.name.includes("anonymous") || route.name === "verify" ? {} : bearer;
      const billingProbe = (size: number) =>
        postJson(`${beacon.url}/v1/beacon/ingest-traces`, sized({ license: license.key, trace_transactions: [] }, size), bearer).then(
          (r) => r.status,
        );
      const slow = await slowBody(beacon.url, route.path, route.declared, headers);
      try {
        const { ingests, verified } = await beaconTraffic();
        assert.ok(share(ingests, 200) >= 0.98, `billing answered 200: ${ingests.join(",")}`);
        assert.ok(share(verified, 200) >= 0.98, `verify answered 200: ${verified.join(",")}`);
        slow.pause();
        assert.equal(slow.answer(), "", "the slow body is still being read");
        const telemetryProbe = (size: number) => postJson(`${beacon.url}${route.path}`, sized({}, size), bearer).then((r) => r.status);
        const probe = route.probe ?? (route.path.includes("/v1/beacon/v1/") ? telemetryProbe : billingProbe);
        await assertHolds(slow.sent(), route.budget, probe);
      } finally {
        slow.close();
      }
    });
  }

  test("sidecar: a slow body on each intake route; billing intake keeps answering 202 and reaches the beacon", async () => {
    const storedBefore = beaconStored(beaconFixture.dataDir).transactions;
    let accepted = 0;
    for (const [path, budget] of [
      ["/v1/transactions", "billing"],
      ["/v1/usage/measures", "billing"],
      ["/v1/metrics", "shared"],
      ["/v1/traces", "shared"],
      ["/v1/logs", "shared"],
    ] as const) {
      const slow = await slowBody(agent.url, path, BODY_LIMIT, {});
      try {
        const statuses = await traffic(25, async () => {
          const answer = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: traceTransactions(2) });
          if (answer.status === 202) accepted += 2;
          return answer.status;
        });
        intake = intake.concat(statuses);
        assert.ok(share(statuses, 202) >= 0.98, `${path}: billing intake answered 202: ${statuses.join(",")}`);
        const others = [
          postJson(`${agent.url}/v1/usage/measures`, usageMeasures(3)),
          postJson(`${agent.url}/v1/metrics`, metricsRequest()),
          postJson(`${agent.url}/v1/traces`, tracesRequest()),
          postJson(`${agent.url}/v1/logs`, logsRequest()),
        ];
        for (const answer of await Promise.all(others)) assert.ok(answer.status < 300, `other intake answers too (${answer.status})`);
        slow.pause();
        await waitFor(
          async () => (await held(budget)) === slow.sent(),
          5_000,
          `${path}: the ${budget} budget holds what the slow body sent`,
        );
        assert.equal(
          await held(budget),
          slow.sent(),
          `${path}: the slow body holds the ${slow.sent()} bytes it sent, not the ${BODY_LIMIT} it declared`,
        );
      } finally {
        slow.close();
      }
    }
    await waitFor(
      () => beaconStored(beaconFixture.dataDir).transactions >= storedBefore + accepted,
      15_000,
      "billing delivered to the beacon",
    );
  });

  test("a missing or bad token is refused from the headers alone: 401 while the client has sent only them, connection closed", async () => {
    const storedBefore = beaconStored(beaconFixture.dataDir);
    const cases: [string, Record<string, string>][] = [
      ["/v1/beacon/ingest-traces", { authorization: "Bearer not.a.token" }],
      ["/v1/beacon/ingest-traces", { authorization: "Basic abc" }],
      ["/v1/beacon/usage-snapshot", { authorization: "Bearer not.a.token" }],
      ["/v1/beacon/v1/metrics", {}],
      ["/v1/beacon/v1/traces", { authorization: "Bearer not.a.token" }],
      ["/v1/beacon/v1/logs", { authorization: `${bearer.authorization}x` }],
    ];
    for (const [path, headers] of cases) {
      const answer = await headersOnly(beacon.url, path, BODY_LIMIT, headers);
      assert.match(answer.head, /^HTTP\/1\.1 401 /, `${path} ${JSON.stringify(headers)}: ${answer.head}`);
      assert.match(answer.head, /\r\nconnection: close\r\n/i, "the connection is closed: the unread body is never waited for");
      assert.ok(answer.closedByServer, "the beacon closed it");
    }
    const large = await headersOnly(beacon.url, "/v1/beacon/verify", VERIFY_LIMIT + 1, {});
    assert.match(large.head, /^HTTP\/1\.1 413 /, "a verify body larger than a license key is refused from its Content-Length");
    // (The sidecar may still be delivering telemetry from earlier tests: billing and snapshots are compared.)
    const { transactions, snapshots } = beaconStored(beaconFixture.dataDir);
    assert.deepEqual(
      { transactions, snapshots },
      { transactions: storedBefore.transactions, snapshots: storedBefore.snapshots },
      "nothing stored",
    );
  });

  test("a stalled body is cut off after http.bodyIdleTimeout (408) and gives its room back; verify's whole body must come within it", async () => {
    const started = Date.now();
    const billingBody = await slowBody(beacon.url, "/v1/beacon/ingest-traces", BODY_LIMIT, bearer);
    const intakeBody = await slowBody(agent.url, "/v1/transactions", BODY_LIMIT, {});
    billingBody.pause();
    intakeBody.pause();
    const verifyBody = await slowBody(beacon.url, "/v1/beacon/verify", VERIFY_LIMIT, {}); // keeps trickling
    try {
      await waitFor(async () => (await held("billing")) === FIRST_BYTES, 2_000, "the stalled intake body holds what it sent");
      for (const [name, slow] of [
        ["beacon billing", billingBody],
        ["sidecar billing intake", intakeBody],
        ["verify, still trickling", verifyBody],
      ] as const) {
        await waitFor(() => slow.answer(), 3 * IDLE_TIMEOUT_MS, `${name}: an answer`);
        assert.match(slow.answer(), /^HTTP\/1\.1 408 .*EGRESS_ERR_BODY_TIMEOUT/s, `${name}: ${slow.answer()}`);
      }
      assert.ok(Date.now() - started >= IDLE_TIMEOUT_MS, "not before the timeout");
      assert.equal(await held("billing"), 0, "the sidecar's billing budget has its room back");
      const whole = (size: number) =>
        postJson(`${beacon.url}/v1/beacon/ingest-traces`, sized({ license: license.key, trace_transactions: [] }, size), bearer);
      assert.notEqual((await whole(BUDGET - 512)).status, 503, "so has the beacon's: a body of nearly all of it fits");
    } finally {
      for (const slow of [billingBody, intakeBody, verifyBody]) slow.close();
    }
  });

  test("anonymous slow bodies cannot take the beacon's connection reserve: ingest with a token and verify still answer", async () => {
    const crowded = await startBeacon(beaconConfig([license], { http: { maxConnections: 40, reservedConnections: 10 } }));
    const slow: Awaited<ReturnType<typeof slowBody>>[] = [];
    const idle: Socket[] = [];
    try {
      const url = (path: string) => `${crowded.url}${path}`;
      const token = { authorization: `Bearer ${(await postJson(url("/v1/beacon/verify"), { license: license.key })).body.token}` };
      // Anonymous slow bodies until one is refused: the 30 connections outside the reserve are all they get.
      let refused = "";
      while (!refused && slow.length < 40) {
        const body = await slowBody(crowded.url, "/v1/beacon/ingest-traces", BODY_LIMIT, {});
        await new Promise((resolve) => setTimeout(resolve, 50));
        slow.push(body);
        refused = body.answer();
      }
      assert.match(refused, /^HTTP\/1\.1 503 .*EGRESS_ERR_BUSY/s, "an anonymous body is refused once only the reserve is left");
      slow.pop()!.close();
      assert.ok(slow.length >= 25 && slow.length <= 30, `they took what was outside the reserve (${slow.length})`);
      // A few idle connections keep the count past the threshold whatever fetch's pool does.
      for (let i = 0; i < 3; i++) idle.push(connect(Number(new URL(crowded.url).port), "127.0.0.1").on("error", () => {}));
      await new Promise((resolve) => setTimeout(resolve, 100));
      const batch = () => ({ license: license.key, trace_transactions: traceTransactions(2) });
      const anonymous = await postJson(url("/v1/beacon/ingest-traces"), batch());
      assert.deepEqual([anonymous.status, anonymous.body.code], [503, "EGRESS_ERR_BUSY"], "no reserve for an anonymous body");
      assert.equal((await postJson(url("/v1/beacon/ingest-traces"), batch(), token)).status, 200, "billing with a token is served");
      assert.equal((await postJson(url("/v1/beacon/verify"), { license: license.key })).status, 200, "verify is served");
      assert.ok(
        slow.every((body) => body.answer() === ""),
        "the slow bodies are still being read: the reserve was what was left",
      );
    } finally {
      for (const body of slow) body.close();
      for (const socket of idle) socket.destroy();
      assert.equal(await crowded.stop("SIGTERM"), 0);
    }
  });

  test("slow anonymous verifies on every connection cannot lock out a sidecar with a token: the newcomer displaces one of them", async () => {
    const full = await startBeacon(beaconConfig([license], { http: { maxConnections: 16, reservedConnections: 4 } }));
    const slow: Awaited<ReturnType<typeof slowBody>>[] = [];
    try {
      const url = (path: string) => `${full.url}${path}`;
      const token = { authorization: `Bearer ${(await postJson(url("/v1/beacon/verify"), { license: license.key })).body.token}` };
      // Every connection the beacon takes, held by a verify that trickles its body in.
      for (let i = 0; i < 20; i++) slow.push(await slowBody(full.url, "/v1/beacon/verify", 4000, {}));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const batch = () => ({ license: license.key, trace_transactions: traceTransactions(2) });
      for (let i = 0; i < 5; i++) {
        const answer = await postJson(url("/v1/beacon/ingest-traces"), batch(), token);
        assert.equal(answer.status, 200, `ingest ${i} with a token: ${JSON.stringify(answer.body)}`);
      }
    } finally {
      for (const body of slow) body.close();
      assert.equal(await full.stop("SIGTERM"), 0);
    }
  });

  test("over every route: at least 98% of valid billing and verify requests succeeded", () => {
    assert.ok(billing.length >= 100 && verifies.length >= 50 && intake.length >= 100);
    for (const [name, statuses, ok] of [
      ["beacon billing", billing, 200],
      ["verify", verifies, 200],
      ["sidecar billing intake", intake, 202],
    ] as const) {
      assert.ok(share(statuses, ok) >= 0.98, `${name}: ${statuses.filter((s) => s !== ok).length} of ${statuses.length} failed`);
    }
  });
});
