import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import { after, before, describe, test } from "node:test";
import { testLicense, traceTransactions, usageMeasures } from "../helpers/fixtures.ts";
import { agentConfig, getJson, postJson, startAgentProcess, waitFor, type ServiceProcess } from "../helpers/processes.ts";

// A "beacon" that answers every request with an endless or 1 GiB body (a TLS-inspecting proxy, a captive portal, a
// wrong beaconUrl), generated as it is sent, against the real sidecar process: the sidecar reads at most its cap of
// each answer, closes the connection, counts the attempt as failed, keeps its records, and its peak RSS (VmHWM)
// stays under 200 MiB. Then the beacon answers properly, and the kept records are delivered, once.

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const RSS_BOUND = 200 * MiB;
const CHUNK = Buffer.alloc(64 * 1024, "x");

function peakRss(pid: number): number {
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) * 1024;
}

function drainedOrClosed(response: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      response.off("drain", done);
      response.off("close", done);
      resolve();
    };
    response.on("drain", done);
    response.on("close", done);
  });
}

/** Writes `total` bytes (Infinity: without end) of `prefix` then x's, at the reader's pace, until it hangs up. */
async function flood(response: ServerResponse, prefix: string, total: number): Promise<number> {
  let sent = 0;
  response.write(prefix);
  while (sent < total && !response.destroyed) {
    const chunk = total - sent < CHUNK.length ? CHUNK.subarray(0, total - sent) : CHUNK;
    sent += chunk.length;
    if (!response.write(chunk)) await drainedOrClosed(response);
  }
  if (!response.destroyed) response.end();
  return sent;
}

interface Hostile {
  url: string;
  /** Requests per path; the bytes each flooded answer got out before the sidecar hung up. */
  requests: Map<string, number>;
  flooded: number[];
  /** Billing transactions answered with a proper `{inserted_count}` once `honest` is set. */
  delivered: string[];
  honest: boolean;
  close(): Promise<void>;
}

async function hostileBeacon(): Promise<Hostile> {
  const state = { requests: new Map<string, number>(), flooded: [] as number[], delivered: [] as string[], honest: false };
  const server = createServer((request, response) => {
    const path = request.url ?? "/";
    state.requests.set(path, (state.requests.get(path) ?? 0) + 1);
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      if (state.honest && path === "/v1/beacon/ingest-traces") {
        const ids = (JSON.parse(body) as { trace_transactions: { id: string }[] }).trace_transactions.map((t) => t.id);
        state.delivered.push(...ids);
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ inserted_count: ids.length }));
        return;
      }
      // verify: chunked without end; ingest-traces: chunked, 1 GiB; the rest: a declared 1 GiB Content-Length.
      const shape =
        path === "/v1/beacon/verify"
          ? { headers: {}, total: Number.POSITIVE_INFINITY }
          : path === "/v1/beacon/ingest-traces"
            ? { headers: {}, total: GiB }
            : { headers: { "content-length": String(GiB) }, total: GiB - 1 };
      response.writeHead(200, { "content-type": "application/json", ...shape.headers });
      void flood(response, '{"token":"', shape.total).then((sent) => state.flooded.push(sent));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return Object.assign(state, {
    url,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}

describe("a hostile beacon answering without end", () => {
  const license = testLicense();
  let beacon: Hostile;
  let agent: ServiceProcess;

  before(async () => {
    beacon = await hostileBeacon();
    const fixture = agentConfig(beacon.url, {
      intervals: { flush: "50ms", usageSnapshot: "400ms" },
      // Time enough to read a whole gigabyte: only the cap can end a read early.
      retry: { minBackoff: "50ms", maxBackoff: "400ms", requestTimeout: "120s" },
      selfTelemetry: { enabled: false },
    });
    agent = await startAgentProcess(fixture, { PLATFORM_LICENSE_KEY: license.key });
  });
  after(async () => {
    await agent?.stop();
    await beacon?.close();
  });

  test("verify, ingest-traces and usage-snapshot answers are cut at the cap: memory stays bounded, the records stay, status says why", async () => {
    const pid = agent.child.pid!;
    const batch = traceTransactions(5);
    assert.equal((await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch })).status, 202);
    assert.equal((await postJson(`${agent.url}/v1/usage/measures`, usageMeasures(3))).status, 202);

    const paths = ["/v1/beacon/verify", "/v1/beacon/ingest-traces", "/v1/beacon/usage-snapshot"];
    const attempted = () => paths.every((path) => (beacon.requests.get(path) ?? 0) >= 3) && beacon.flooded.length >= 9;
    await waitFor(() => attempted() || peakRss(pid) >= RSS_BOUND, 60_000, "three attempts on each route, each cut off");
    assert.ok(peakRss(pid) < RSS_BOUND, `sidecar peak RSS ${(peakRss(pid) / MiB).toFixed(0)} MiB is under 200 MiB`);
    // Each attempt was cut off near the 1 MiB cap (plus what the sockets' buffers held), never read to its end.
    const mostSent = Math.max(...beacon.flooded);
    assert.ok(mostSent < 32 * MiB, `a flooded answer was cut off early (at most ${(mostSent / MiB).toFixed(1)} MiB got out)`);

    const status = await getJson(`${agent.url}/v1/status`);
    assert.equal(status.streams.billing.delivered, 0, "no answer past the cap counts as a delivery");
    assert.equal(status.streams.billing.pending + status.streams.billing.sending, 5, "the billing records are kept");
    assert.match(status.streams.billing.lastError.message, /larger than 1 MiB/);
    assert.match(status.streams.billing.lastError.message, new RegExp(`from ${beacon.url}`), "the error names the beacon's origin");
    assert.doesNotMatch(JSON.stringify(status), new RegExp(license.key), "no license key in status");
    assert.match(status.streams.usage.lastError.message, /larger than 1 MiB/);
    assert.equal(status.license.state, "unverified");
    assert.match(status.license.lastError, /larger than 1 MiB/);

    // The beacon comes to its senses: the kept records go out, each once.
    beacon.honest = true;
    await waitFor(async () => (await getJson(`${agent.url}/v1/status`)).streams.billing.delivered === 5, 15_000, "billing delivered");
    assert.deepEqual(beacon.delivered.toSorted(), batch.map((t) => t.id).toSorted(), "every record delivered once");
    assert.ok(peakRss(pid) < RSS_BOUND, `sidecar peak RSS ${(peakRss(pid) / MiB).toFixed(0)} MiB is under 200 MiB`);
    console.log(
      `# sidecar peak RSS ${(peakRss(pid) / MiB).toFixed(0)} MiB; most of one flooded answer sent ${(mostSent / MiB).toFixed(1)} MiB`,
    );
  });
});
