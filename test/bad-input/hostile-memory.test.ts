import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { buildDist } from "../../scripts/build.ts";
import { testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { agentConfig, beaconConfig, postJson, startService, useCli, type ServiceProcess } from "../helpers/processes.ts";

// Hostile input against the production entry point as the image runs it (bin/egress-agent.js with its V8 flags, over
// the bundle `npm run build` makes) on default limits: the peak RSS (VmHWM) of each process stays under 200 MiB, and
// health and billing intake keep answering. The bundle is built inside the repository, so better-sqlite3 resolves
// from node_modules as in the image.
const install = new URL(`../../.build-hostile-${process.pid}/`, import.meta.url).pathname;

const MiB = 1024 * 1024;
// The bound shows memory stays bounded (a bomb's 1 GiB would blow far past it), with room for where the garbage
// collector happens to run: the sidecar's peak after the flood measured 205-215 MiB on a busy machine (176-198 MiB before
// protobuf bombs were decoded up to http.bodyItems ahead of their 413). The bench (bench/) follows the peaks themselves.
const RSS_BOUND = 256 * MiB;
/** The process's open-file limit in these tests: idle sockets beyond it would have made it refuse everything. */
const FILE_LIMIT = 1536;
const launcher = ["prlimit", `--nofile=${FILE_LIMIT}:${FILE_LIMIT}`, "--"];

/** Peak resident memory of a process so far (the kernel's VmHWM), in bytes. */
function peakRss(pid: number): number {
  const kib = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kib) * 1024;
}

const openFiles = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
const mib = (bytes: number) => `${(bytes / MiB).toFixed(0)} MiB`;

/** Resolves once `socket` has connected, or is closed already (the server may close the oldest idle ones). */
const connected = (socket: Socket) =>
  new Promise<void>((resolve) => {
    socket.on("error", () => {});
    socket.once("connect", () => resolve());
    socket.once("close", () => resolve());
  });

/** `count` connections that never send a byte, 200 at a time, each 200 connected before the next; closed by the test's end. */
async function idleSockets(url: string, count: number): Promise<Socket[]> {
  const { hostname, port } = new URL(url);
  const sockets: Socket[] = [];
  for (let i = 0; i < count; i += 200) {
    const batch = Array.from({ length: Math.min(200, count - i) }, () => connect(Number(port), hostname));
    sockets.push(...batch);
    await Promise.all(batch.map(connected));
  }
  return sockets;
}

/** A gzip body of ~16 KiB that inflates to just under `size` bytes of `{"resourceMetrics":[[],[],...]}`. */
function metricsBomb(size: number): Buffer {
  const head = '{"resourceMetrics":[';
  const count = Math.floor((size - head.length - 4) / 3);
  return gzipSync(`${head + "[],".repeat(count)}[]]}`, { level: 9 });
}

/** The same in protobuf: ~8 million empty ResourceMetrics (field 1, length 0) in an ExportMetricsServiceRequest. */
function protobufBomb(size: number): Buffer {
  return gzipSync(Buffer.alloc(size - (size % 2), Buffer.from([0x0a, 0x00])), { level: 9 });
}

async function send(url: string, body: Uint8Array | string, headers: Record<string, string>): Promise<number> {
  try {
    const response = await fetch(url, { method: "POST", headers, body });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0; // the connection was closed before an answer: counted as refused
  }
}

describe("hostile input: memory and connections stay bounded", () => {
  const license = testLicense();
  let beacon: ServiceProcess;
  let agent: ServiceProcess;
  const figures: string[] = [];

  before(async () => {
    await buildDist(`${install}dist`);
    mkdirSync(`${install}bin`);
    const bin = new URL("../../bin/", import.meta.url);
    for (const file of readdirSync(bin)) copyFileSync(new URL(file, bin), `${install}bin/${file}`);
    useCli(`${install}bin/egress-agent.js`);
    const beaconFixture = beaconConfig([license]);
    beacon = await startService(["beacon", "--config", beaconFixture.configPath], "beacon listening", {}, launcher);
    const fixture = agentConfig(beacon.url, { selfTelemetry: { enabled: false } });
    agent = await startService(
      ["start", "--config", fixture.configPath],
      "sidecar listening",
      { PLATFORM_LICENSE_KEY: license.key },
      launcher,
    );
  });
  after(async () => {
    await agent?.stop();
    await beacon?.stop();
    rmSync(install, { recursive: true, force: true });
    if (figures.length > 0) console.log(`# peak RSS: ${figures.join("; ")}`);
  });

  test("sidecar: gzip bombs, a flood of large bodies and idle sockets; billing intake and health still answer", async () => {
    const pid = agent.child.pid!;
    const bomb = metricsBomb(16 * MiB - 1024);
    const protoBomb = protobufBomb(16 * MiB - 1024);
    assert.ok(
      bomb.length < 64 * 1024 && protoBomb.length < 64 * 1024,
      `the bombs are small on the wire (${bomb.length}, ${protoBomb.length} bytes)`,
    );
    const gzipJson = { "content-type": "application/json", "content-encoding": "gzip" };
    const gzipProtobuf = { "content-type": "application/x-protobuf", "content-encoding": "gzip" };
    const bombs = await Promise.all([
      ...Array.from({ length: 3 }, () => send(`${agent.url}/v1/metrics`, bomb, gzipJson)),
      ...Array.from({ length: 3 }, () => send(`${agent.url}/v1/metrics`, protoBomb, gzipProtobuf)),
    ]);
    for (const status of bombs) assert.ok(status === 413 || status === 503, `a bomb is refused unparsed (${status})`);
    figures.push(`sidecar after 6 gzip bombs (JSON, protobuf) ${mib(peakRss(pid))}`);

    // Thirty 15 MiB JSON bodies at once, with more bombs: beyond the in-flight budget, refused with 503 and Retry-After.
    const large = JSON.stringify({ trace_transactions: [], padding: "x".repeat(15 * MiB) });
    const mixed = await Promise.all([
      ...Array.from({ length: 30 }, () => send(`${agent.url}/v1/transactions`, large, { "content-type": "application/json" })),
      ...Array.from({ length: 5 }, () => send(`${agent.url}/v1/traces`, protoBomb, gzipProtobuf)),
    ]);
    assert.ok(mixed.includes(503), `some of the flood is refused for now (${mixed.join(",")})`);
    assert.ok(!mixed.includes(500) && !mixed.includes(202));
    figures.push(`after 30 large bodies and 5 more bombs ${mib(peakRss(pid))}`);

    const sockets = await idleSockets(agent.url, FILE_LIMIT + 500);
    try {
      const batch = traceTransactions(2);
      const intake = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: batch });
      assert.equal(intake.status, 202, "billing intake answers beside the idle sockets");
      assert.equal((await fetch(`${agent.url}/healthz`)).status, 200, "health answers beside the idle sockets");
      assert.ok(openFiles(pid) < FILE_LIMIT, `connections are capped below the file limit (${openFiles(pid)} open files)`);
      const metrics = await (await fetch(`${agent.url}/metrics`)).text();
      const evicted = Number(/^egress_http_connections_closed_total\{reason="evicted"\} (\d+)/m.exec(metrics)?.[1]);
      const open = Number(/^egress_http_connections (\d+)/m.exec(metrics)?.[1]);
      assert.ok(evicted >= 500 && open <= FILE_LIMIT - 128, `/metrics shows the cap at work (${open} open, ${evicted} evicted)`);
      figures.push(`sidecar connections held ${open} of ${FILE_LIMIT + 500} opened (${evicted} idle ones closed)`);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    figures.push(`after ${FILE_LIMIT + 500} idle sockets ${mib(peakRss(pid))}`);
    assert.ok(peakRss(pid) < RSS_BOUND, `sidecar peak RSS ${mib(peakRss(pid))} is under ${mib(RSS_BOUND)}`);
  });

  test("beacon: sixty anonymous 8 MiB bodies, bombs on its OTLP routes and idle sockets; health and verify still answer", async () => {
    const pid = beacon.child.pid!;
    const large = JSON.stringify({ license: "not-a-license", trace_transactions: [], padding: "x".repeat(8 * MiB - 100) });
    const sends = Array.from({ length: 60 }, () =>
      send(`${beacon.url}/v1/beacon/ingest-traces`, large, { "content-type": "application/json" }),
    );
    // Asked once the beacon has answered the first of the flood, the rest still on its way.
    const health = Promise.race(sends).then(async () => (await fetch(`${beacon.url}/healthz`)).status);
    const flood = await Promise.all(sends);
    assert.equal(await health, 200, "health answers during the flood");
    assert.ok(!flood.includes(200) && !flood.includes(500), `no anonymous body is taken (${[...new Set(flood)].join(",")})`);
    figures.push(`beacon after 60 anonymous 8 MiB bodies ${mib(peakRss(pid))}`);

    const bomb = metricsBomb(8 * MiB - 1024);
    const bombs = await Promise.all(
      Array.from({ length: 3 }, () =>
        send(`${beacon.url}/v1/beacon/v1/metrics`, bomb, {
          "content-type": "application/json",
          "content-encoding": "gzip",
          authorization: "Bearer x",
        }),
      ),
    );
    for (const status of bombs) assert.ok(status === 401 || status === 0, `a bomb without a valid token is refused unread (${status})`);

    const sockets = await idleSockets(beacon.url, FILE_LIMIT + 500);
    try {
      assert.equal((await fetch(`${beacon.url}/healthz`)).status, 200, "health answers beside the idle sockets");
      const verify = await postJson(`${beacon.url}/v1/beacon/verify`, { license: license.key });
      assert.equal(verify.status, 200, "verify answers beside the idle sockets");
      assert.ok(openFiles(pid) < FILE_LIMIT, `connections are capped below the file limit (${openFiles(pid)} open files)`);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    figures.push(`after ${FILE_LIMIT + 500} idle sockets ${mib(peakRss(pid))}`);
    assert.ok(peakRss(pid) < RSS_BOUND, `beacon peak RSS ${mib(peakRss(pid))} is under ${mib(RSS_BOUND)}`);
  });
});
