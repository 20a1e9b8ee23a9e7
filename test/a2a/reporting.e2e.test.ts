import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import { A2aConversation } from "../../src/a2a/client.ts";
import { assistantUuid } from "../../src/a2a/graph-config.ts";
import { BeaconStore } from "../../src/beacon/store.ts";
import { ORG_ID, testLicense } from "../helpers/fixtures.ts";
import {
  agentConfig,
  beaconConfig,
  getJson,
  startAgentProcess,
  startBeacon,
  startService,
  tempDir,
  waitFor,
  type ServiceProcess,
} from "../helpers/processes.ts";

// The agent server's reporting, end to end with real processes: runs counted per billing session go through the
// egress sidecar to the beacon as trace transactions, request metrics are relayed the same way, and spans go to
// the tracing endpoint only when PLATFORM_API_KEY is set.

const GRAPHS = new URL("../fixtures/graphs/graph.json", import.meta.url).pathname;
const NOTES = assistantUuid("notes");
const FAILING = assistantUuid("failing");

function serveAgent(dataDir: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ServiceProcess> {
  return startService(
    ["a2a", "serve", "--config", GRAPHS, "--listen", "127.0.0.1:0", "--data-dir", dataDir, ...args],
    "agent server listening",
    env,
  );
}

function sidecarArgs(sidecarUrl: string, tenantId: string): string[] {
  return ["--sidecar-url", sidecarUrl, "--tenant-id", tenantId, "--organization-id", ORG_ID, "--report-interval", "1s"];
}

interface SessionTotal {
  traces: number;
  transactions: number;
}

/** What the beacon stored for one tenant: per session, the trace_count sum and the number of transactions. */
function beaconSessions(beaconDataDir: string, tenantId: string): Record<string, SessionTotal> {
  const path = join(beaconDataDir, "beacon.db");
  if (!existsSync(path)) return {};
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare(
        `SELECT session_id, sum(trace_count) AS traces, count(*) AS transactions FROM trace_transactions
          WHERE tenant_id = ? AND organization_id = ? AND transaction_type = 'traces' GROUP BY session_id`,
      )
      .all(tenantId, ORG_ID) as { session_id: string; traces: number; transactions: number }[];
    return Object.fromEntries(rows.map((row) => [row.session_id, { traces: row.traces, transactions: row.transactions }]));
  } finally {
    db.close();
  }
}

/** Waits until the beacon's trace totals of the tenant are exactly `expected` (session -> runs). */
function beaconTotals(beaconDataDir: string, tenantId: string, expected: Record<string, number>, what: string) {
  return waitFor(
    async () => {
      const sessions = beaconSessions(beaconDataDir, tenantId);
      const traces = Object.fromEntries(Object.entries(sessions).map(([session, total]) => [session, total.traces]));
      return JSON.stringify(traces, Object.keys(traces).sort()) === JSON.stringify(expected, Object.keys(expected).sort())
        ? sessions
        : undefined;
    },
    15_000,
    what,
  );
}

type Attributes = { key: string; value: { stringValue?: string; intValue?: string | number; doubleValue?: number } }[];
const attributeMap = (attributes: Attributes | undefined) =>
  Object.fromEntries((attributes ?? []).map((a) => [a.key, a.value.stringValue ?? a.value.intValue ?? a.value.doubleValue]));

/** The metric data points the beacon stored from resources with service.name = agent-server, by metric name. */
function agentServerMetrics(beaconDataDir: string): { resources: any[]; points: Map<string, any[]> } {
  if (!existsSync(join(beaconDataDir, "beacon.db"))) return { resources: [], points: new Map() };
  const store = new BeaconStore(beaconDataDir, { readonly: true });
  try {
    const resources = store
      .otlpBatches("metrics")
      .flatMap((batch) => (batch.body as { resourceMetrics: any[] }).resourceMetrics)
      .filter((entry) => attributeMap(entry.resource.attributes)["service.name"] === "agent-server");
    const points = new Map<string, any[]>();
    for (const metric of resources.flatMap((entry) => entry.scopeMetrics.flatMap((scope: any) => scope.metrics))) {
      points.set(metric.name, [...(points.get(metric.name) ?? []), ...(metric.gauge ?? metric.sum).dataPoints]);
    }
    return { resources, points };
  } finally {
    store.close();
  }
}

/** The JSON log lines of a process's output. */
function logLines(output: string): Record<string, unknown>[] {
  return output.split("\n").flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

/** Rows of run counts the agent server in `dataDir` has not yet reported (each is deleted once the sidecar took it). */
function unreportedRuns(dataDir: string): number {
  const tasks = new Database(join(dataDir, "tasks.db"), { readonly: true });
  try {
    return (tasks.prepare("SELECT count(*) AS n FROM run_counts").get() as { n: number }).n;
  } finally {
    tasks.close();
  }
}

describe("agent server -> egress sidecar -> beacon", () => {
  const license = testLicense();
  let beaconFixture: ReturnType<typeof beaconConfig>;
  let beacon: ServiceProcess;
  let sidecar: ServiceProcess;

  before(async () => {
    beaconFixture = beaconConfig([license]);
    beacon = await startBeacon(beaconFixture);
    sidecar = await startAgentProcess(agentConfig(beacon.url, { selfTelemetry: { enabled: false } }), {
      PLATFORM_LICENSE_KEY: license.key,
    });
  });
  after(async () => {
    await sidecar?.stop();
    await beacon?.stop();
  });

  test("runs reach the beacon as trace transactions per assistant session; request metrics are relayed", async () => {
    const tenantId = randomUUID();
    const server = await serveAgent(tempDir("a2a-report-"), sidecarArgs(sidecar.url, tenantId));
    try {
      for (const text of ["one", "two", "three"]) {
        const task = await new A2aConversation({ baseUrl: server.url, assistantId: "notes" }).send(text);
        assert.equal(task.status.state, "completed");
      }
      const failed = await new A2aConversation({ baseUrl: server.url, assistantId: "failing" }).send("go");
      assert.equal(failed.status.state, "failed");
      // A v1.0 request, and a method name the caller made up (it must not become a label value of its own).
      for (const method of ["GetTask", "x/made-up-4711"]) {
        await fetch(`${server.url}/a2a/notes`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { id: randomUUID() } }),
        });
      }

      const sessions = await beaconTotals(
        beaconFixture.dataDir,
        tenantId,
        { [NOTES]: 3, [FAILING]: 1 },
        "3 notes runs and 1 failing run at the beacon",
      );
      assert.ok(sessions[NOTES]!.transactions >= 1);

      const { resources, points } = await waitFor(
        async () => {
          const found = agentServerMetrics(beaconFixture.dataDir);
          const methods = (found.points.get("platform_http_requests_latency") ?? []).map((p) => attributeMap(p.attributes).method);
          return found.points.has("platform_http_requests_failed") && methods.includes("GetTask") && methods.includes("unknown")
            ? found
            : undefined;
        },
        15_000,
        "the agent server's metrics at the beacon",
      );
      // The endpoint is the route template, as the sidecar's privacy filter would make it anyway: no graph id leaves.
      assert.deepEqual(attributeMap(resources[0].resource.attributes), { "service.name": "agent-server" });
      const latency = points
        .get("platform_http_requests_latency")!
        .map((p) => ({ attributes: attributeMap(p.attributes), value: p.asDouble }));
      assert.ok(
        latency.some(
          (p) =>
            p.attributes.endpoint === "/a2a/{assistant_id}" &&
            p.attributes.method === "message/send" &&
            p.attributes.service_name === "agent-server",
        ),
        JSON.stringify(latency),
      );
      assert.ok(
        latency.every((p) => typeof p.value === "number" && p.value >= 0 && p.value < 60),
        JSON.stringify(latency),
      );
      const methods = new Set(latency.map((p) => p.attributes.method));
      assert.ok(methods.has("GetTask") && methods.has("unknown"), JSON.stringify([...methods]));
      assert.ok(![...methods].some((method) => String(method).includes("made-up")), "a made-up method name is not a label value");
      const failures = points
        .get("platform_http_requests_failed")!
        .map((p) => ({ attributes: attributeMap(p.attributes), value: Number(p.asInt) }));
      assert.ok(
        failures.some((p) => p.attributes.endpoint === "/a2a/{assistant_id}" && p.value === 1),
        JSON.stringify(failures),
      );
      assert.equal(await server.stop("SIGTERM"), 0);
    } finally {
      await server.stop("SIGKILL");
    }
  });

  test("across a SIGTERM and a restart: the open interval is reported at stop, and nothing is counted twice or lost", async () => {
    const tenantId = randomUUID();
    const dataDir = tempDir("a2a-restart-");
    const send = async (server: ServiceProcess, n: number) => {
      for (let i = 0; i < n; i++)
        assert.equal((await new A2aConversation({ baseUrl: server.url, assistantId: "notes" }).send(`run ${i}`)).status.state, "completed");
    };

    const first = await serveAgent(dataDir, sidecarArgs(sidecar.url, tenantId));
    try {
      await send(first, 2);
      await beaconTotals(beaconFixture.dataDir, tenantId, { [NOTES]: 2 }, "2 runs reported by the interval");
      // One more run just after an interval starts, and a stop right away: its interval is still open at the stop.
      await new Promise((resolve) => setTimeout(resolve, 1_000 - (Date.now() % 1_000) + 20));
      await send(first, 1);
      assert.equal(await first.stop("SIGTERM"), 0);
    } finally {
      await first.stop("SIGKILL");
    }
    const log = logLines(first.output());
    const stopping = log.findIndex((line) => line.msg === "agent server stopping");
    const reported = (lines: typeof log) =>
      lines.filter((line) => line.msg === "reported runs to the sidecar").reduce((sum, line) => sum + Number(line.runs), 0);
    assert.ok(stopping > 0, first.output());
    assert.deepEqual(
      [reported(log.slice(0, stopping)), reported(log.slice(stopping))],
      [2, 1],
      "2 runs by the interval, the last one by the stop",
    );
    await beaconTotals(beaconFixture.dataDir, tenantId, { [NOTES]: 3 }, "the open interval reported at stop");

    const second = await serveAgent(dataDir, sidecarArgs(sidecar.url, tenantId));
    try {
      await send(second, 2);
      await beaconTotals(beaconFixture.dataDir, tenantId, { [NOTES]: 5 }, "2 more runs after the restart");
      // Every counted run reported and released: the agent server has nothing left it could send again.
      await waitFor(() => unreportedRuns(dataDir) === 0, 10_000, "run counts released");
      assert.equal(beaconSessions(beaconFixture.dataDir, tenantId)[NOTES]!.traces, 5);
      assert.equal(await second.stop("SIGTERM"), 0);
    } finally {
      await second.stop("SIGKILL");
    }
    assert.equal(unreportedRuns(dataDir), 0, "every counted run was reported and released");
    // The last stop reported its runs to the sidecar before the process exited: once the sidecar has sent everything
    // on, the beacon holds all there will ever be.
    await waitFor(
      async () => {
        const billing = (await getJson(`${sidecar.url}/v1/status`)).streams.billing;
        return billing.pending + billing.sending === 0;
      },
      15_000,
      "the sidecar's billing stream drained",
    );
    assert.equal(beaconSessions(beaconFixture.dataDir, tenantId)[NOTES]!.traces, 5);
  });
});

interface Captured {
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

/** A tracing endpoint stand-in: records every POST (OTLP JSON) and answers 200. */
async function captureServer() {
  const received: Captured[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      let raw = Buffer.concat(chunks);
      if (request.headers["content-encoding"] === "gzip") raw = gunzipSync(raw);
      let body: unknown;
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch {
        body = raw.toString("utf8");
      }
      received.push({ path: request.url ?? "", headers: request.headers, body });
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Every span the capture server got, with its attributes as a map. */
function spansOf(received: Captured[]) {
  return received.flatMap((request) =>
    (request.body.resourceSpans ?? []).flatMap((resource: any) =>
      resource.scopeSpans.flatMap((scope: any) =>
        scope.spans.map((span: any) => ({
          name: span.name as string,
          traceId: span.traceId as string,
          attributes: attributeMap(span.attributes),
        })),
      ),
    ),
  );
}

test("tracing: spans go to PLATFORM_ENDPOINT with the key and project headers and the conversation's thread id; nothing without PLATFORM_API_KEY", async () => {
  assert.equal(process.env.PLATFORM_API_KEY, undefined, "the test's own environment has no PLATFORM_API_KEY");
  const apiKey = `some-secret-key-${randomUUID()}`;
  const on = await captureServer();
  const off = await captureServer();
  // Started one by one inside the try: a failed start still closes the capture servers (else the file never ends).
  let traced: Awaited<ReturnType<typeof serveAgent>> | undefined;
  let untraced: Awaited<ReturnType<typeof serveAgent>> | undefined;
  try {
    traced = await serveAgent(tempDir("a2a-traced-"), ["--trace-export-interval", "500ms"], {
      PLATFORM_API_KEY: apiKey,
      PLATFORM_PROJECT: "proj",
      PLATFORM_ENDPOINT: on.url,
    });
    untraced = await serveAgent(tempDir("a2a-untraced-"), [], { PLATFORM_PROJECT: "proj", PLATFORM_ENDPOINT: off.url });
    const clientThread = randomUUID();
    const conversation = new A2aConversation({ baseUrl: traced.url, assistantId: "notes", threadId: clientThread });
    const firstTurn = await conversation.send("first");
    const secondTurn = await conversation.send("second");
    assert.equal(secondTurn.contextId, firstTurn.contextId);
    assert.notEqual(firstTurn.contextId, clientThread);
    // Both given, and different: the message's contextId wins (the platform's server converts contextId to thread_id).
    const thirdTurn = await fetch(`${traced.url}/a2a/notes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 3,
        method: "message/send",
        params: {
          message: { role: "user", messageId: randomUUID(), contextId: firstTurn.contextId, parts: [{ kind: "text", text: "third" }] },
        },
        metadata: { thread_id: "someone-elses-thread" },
      }),
    }).then(async (response) => ((await response.json()) as { result: { id: string } }).result);
    assert.equal((await new A2aConversation({ baseUrl: untraced.url, assistantId: "notes" }).send("not traced")).status.state, "completed");

    // Exported by the batch processor's schedule (--trace-export-interval), not only at stop.
    const spans = await waitFor(
      async () => {
        const all = spansOf(on.received);
        const turns = new Set(all.map((span) => span.attributes["a2a.task_id"]));
        return turns.has(firstTurn.id) && turns.has(secondTurn.id) && turns.has(thirdTurn.id) ? all : undefined;
      },
      12_000,
      "both turns' spans at the tracing endpoint",
    );

    for (const request of on.received) {
      assert.equal(request.path, "/otel/v1/traces");
      assert.equal(request.headers["x-api-key"], apiKey);
      assert.equal(request.headers["platform-project"], "proj");
    }
    // Each request's span is the root of its own trace; the graph's run span is its child and names the task.
    const turnOf = (taskId: string) => {
      const traceId = spans.find((span) => span.attributes["a2a.task_id"] === taskId)!.traceId;
      return spans.filter((span) => span.traceId === traceId);
    };
    const first = turnOf(firstTurn.id);
    const second = turnOf(secondTurn.id);
    assert.deepEqual(first.map((span) => span.name).sort(), ["a2a message/send", "graph notes"]);
    assert.deepEqual(second.map((span) => span.name).sort(), ["a2a message/send", "graph notes"]);
    for (const span of first) assert.equal(span.attributes["platform.metadata.thread_id"], clientThread, `${span.name} of the first turn`);
    for (const span of [...second, ...turnOf(thirdTurn.id)])
      assert.equal(span.attributes["platform.metadata.thread_id"], firstTurn.contextId, `${span.name} of a later turn`);

    // Stopping flushes whatever a tracer holds: the untraced server still sends nothing.
    assert.equal(await traced.stop("SIGTERM"), 0);
    assert.equal(await untraced.stop("SIGTERM"), 0);
    assert.deepEqual(off.received, [], "no PLATFORM_API_KEY: nothing exported");
    for (const output of [traced.output(), untraced.output()])
      assert.ok(!output.includes(apiKey), "the API key never appears in the agent server's output");
    assert.match(traced.output(), /"tracing":true/);
    assert.match(untraced.output(), /"tracing":false/);
  } finally {
    await traced?.stop("SIGKILL");
    await untraced?.stop("SIGKILL");
    await on.close();
    await off.close();
  }
});
