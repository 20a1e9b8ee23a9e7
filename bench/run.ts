// npm run bench: every figure beside its floor, measured in the same run. Prints a table; never asserts.
// `npm run bench -- --write` also writes it to bench/RESULTS.md; `--quick` shortens the drain, idle and agent-server runs.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { buildDist } from "../scripts/build.ts";
import { cliNodeFlags, useCli } from "../test/helpers/processes.ts";
import { agentServer, inProcessGraph, messageBodies, TURNS, type AgentServerRun } from "./agent-server.ts";
import { beaconIngestLoad, beaconReplicasSeconds, postgresInsertSeconds } from "./beacon-scale.ts";
import { summarize, type LoadSummary } from "./conversations.ts";
import { bareNodeRss, beaconInsertSeconds, httpPostSeconds, httpRelaySeconds, sqliteInsertSeconds } from "./floors.ts";
import { CLIENTS, fmt, machine, mb, median } from "./measure.ts";
import { drain, idle, ingest, otlpRelay } from "./sidecar.ts";
import { BATCH, INGEST_TOTAL, OTLP_POINTS, OTLP_REQUESTS, otlpBodies, transactionBodies } from "./workloads.ts";

const quick = process.argv.includes("--quick");
const DRAIN = quick ? 100_000 : 1_000_000;
const IDLE_SECONDS = quick ? 10 : 60;
const A2A_REQUESTS = quick ? 500 : 2_000;
const BEACON_BATCHES = quick ? 60 : 200;
const say = (line: string) => process.stderr.write(`bench: ${line}\n`);

// The processes run the installed entry point on the bundled CLI, as the image does (no type stripping at start).
say("building dist/");
await buildDist();
useCli(new URL("../bin/egress-agent.js", import.meta.url).pathname);

const transactions = transactionBodies();
const otlp = otlpBodies();
const otlpBytes = otlp.reduce((total, body) => total + Buffer.byteLength(body), 0);

say("floors");
const sqliteFloor = INGEST_TOTAL / sqliteInsertSeconds(transactions);
const httpFloor = INGEST_TOTAL / (await httpPostSeconds(transactions));
const relayFloorBytes = mb(otlpBytes) / (await httpRelaySeconds(otlp, "bytes", cliNodeFlags()));
const relayFloorJson = mb(otlpBytes) / (await httpRelaySeconds(otlp, "json", cliNodeFlags()));
const nodeFloor = bareNodeRss(cliNodeFlags(), 5_000);
say("ingest");
const ingested = await ingest(transactions);
const ingestRate = INGEST_TOTAL / ingested.seconds;
say("otlp relay");
const relayed = await otlpRelay(otlp);
say(`drain of ${fmt(DRAIN)}`);
const drainFloor = beaconInsertSeconds(DRAIN, BATCH);
const drained = await drain(DRAIN);
say(`start-up and ${IDLE_SECONDS} s idle`);
const idled = await idle(5, IDLE_SECONDS);
say(`agent server: ${fmt(A2A_REQUESTS)} messages starting conversations, ${fmt(A2A_REQUESTS)} in ${TURNS}-turn ones; floors`);
const graphFloor = await inProcessGraph(A2A_REQUESTS, cliNodeFlags());
const a2aHttpFloor = A2A_REQUESTS / (await httpPostSeconds(messageBodies(A2A_REQUESTS)));
const served = await agentServer(A2A_REQUESTS);
say(`beacon on PostgreSQL: ${fmt(BEACON_BATCHES * BATCH)} transactions through one replica and through two; floor`);
const beaconLoad = beaconIngestLoad(BEACON_BATCHES);
const beaconRows = BEACON_BATCHES * BATCH;
const pgFloor = beaconRows / (await postgresInsertSeconds(beaconLoad.rows));
const oneReplica = beaconRows / (await beaconReplicasSeconds(1, beaconLoad));
const twoReplicas = beaconRows / (await beaconReplicasSeconds(2, beaconLoad));

const MiB = 2 ** 20;
const verdict = (ok: boolean) => (ok ? "met" : "**missed**");
const [fresh, freshFloor] = [summarize(served.fresh), summarize(graphFloor.fresh)];
const [continued, continuedFloor] = [summarize(served.continued), summarize(graphFloor.continued)];
const a2aFigure = (load: LoadSummary) => `${fmt(load.perSecond)} req/s; median ${fmt(load.medianMs, 1)} ms, p99 ${fmt(load.p99Ms, 1)} ms`;
// The server and the floor each run on one thread: the inverse of a throughput is the time one request holds it.
const a2aOverhead = (load: LoadSummary, floor: LoadSummary) =>
  `no target; overhead over the in-process graph: ${fmt(1000 / load.perSecond - 1000 / floor.perSecond, 1)} ms per request (${(load.perSecond / floor.perSecond).toFixed(2)} of its throughput)`;
const rssOf = (run: AgentServerRun) =>
  `${fmt(run.idleRss / MiB)} / ${fmt(run.rssAfterFresh / MiB)} / ${fmt(run.rssAfterContinued / MiB)} MiB`;
const rows: [string, string, string, string][] = [
  [
    `1. Ingest: \`POST /v1/transactions\`, batches of ${BATCH}, ${CLIENTS} clients, beacon away`,
    `${fmt(ingestRate)} tx/s`,
    `SQLite floor ${fmt(sqliteFloor)} tx/s (${(ingestRate / sqliteFloor).toFixed(2)}); HTTP floor ${fmt(httpFloor)} tx/s (${(ingestRate / httpFloor).toFixed(2)})`,
    `≥ 50,000/s: ${verdict(ingestRate >= 50_000)}; ≥ 0.5 of SQLite: ${verdict(ingestRate / sqliteFloor >= 0.5)}`,
  ],
  [
    `2. Drain: ${fmt(DRAIN)} buffered transactions to a local beacon`,
    `${fmt(drained.seconds, 1)} s (${fmt(DRAIN / drained.seconds)} tx/s)`,
    `floor: raw insert into the beacon's table, ${BATCH} per commit, ${fmt(drainFloor, 1)} s (${(drainFloor / drained.seconds).toFixed(2)}); start-up on that outbox ${fmt(drained.startMs)} ms`,
    `< 30 s: ${verdict(drained.seconds < 30)}`,
  ],
  [
    `3. OTLP relay: ${OTLP_REQUESTS} metrics requests of ${OTLP_POINTS} points (${fmt(mb(otlpBytes), 1)} MB JSON), received to stored by the beacon`,
    `${fmt(mb(otlpBytes) / relayed.seconds, 1)} MB/s (intake alone ${fmt(mb(otlpBytes) / relayed.intakeSeconds, 1)} MB/s)`,
    `two-hop relay floors (two processes): JSON parsed, re-serialised and parsed again ${fmt(relayFloorJson, 1)} MB/s (${(mb(otlpBytes) / relayed.seconds / relayFloorJson).toFixed(2)}); bytes passed through unread ${fmt(relayFloorBytes, 1)} MB/s`,
    `≥ 50 MB/s: ${verdict(mb(otlpBytes) / relayed.seconds >= 50)}`,
  ],
  [
    "4. Memory: RSS idle / peak during ingest / OTLP / drain",
    `${fmt(idled.rss / MiB)} / ${fmt(ingested.peakRss / MiB)} / ${fmt(relayed.peakRss / MiB)} / ${fmt(drained.peakRss / MiB)} MiB`,
    `floor: bare Node with the same flags, better-sqlite3 open and an HTTP server that has answered, ${fmt(nodeFloor / MiB)} MiB`,
    `idle < 80, peak < 200: ${verdict(idled.rss < 80 * MiB && Math.max(ingested.peakRss, relayed.peakRss, drained.peakRss) < 200 * MiB)}`,
  ],
  [
    `5. Idle CPU over ${IDLE_SECONDS} s (defaults: own telemetry, usage snapshots, license schedule)`,
    `${fmt(idled.cpuSeconds, 2)} s`,
    "",
    `< 0.2 s per 60 s: ${verdict(idled.cpuSeconds < (0.2 * IDLE_SECONDS) / 60)}`,
  ],
  [
    "6. Start-up to ready (spawn to `/readyz` 200, license verified), median of 5",
    `${fmt(median(idled.startMs))} ms`,
    `runs: ${idled.startMs.map((ms) => fmt(ms)).join(", ")} ms`,
    `< 500 ms: ${verdict(median(idled.startMs) < 500)}`,
  ],
  [
    `7. Agent server: A2A \`message/send\` to the example graph, ${fmt(A2A_REQUESTS)} messages each starting a conversation, ${CLIENTS} clients`,
    a2aFigure(fresh),
    `in-process graph (\`graph.invoke\` on the same SQLite checkpointer, ${CLIENTS} at a time): ${a2aFigure(freshFloor)}; HTTP floor (same bodies to an empty JSON route) ${fmt(a2aHttpFloor)} req/s`,
    a2aOverhead(fresh, freshFloor),
  ],
  [
    `8. Agent server: ${fmt(A2A_REQUESTS)} messages in ${TURNS}-turn conversations (each turn continues the previous answer's contextId), ${CLIENTS} clients`,
    a2aFigure(continued),
    `in-process graph, the same turns on the same threads: ${a2aFigure(continuedFloor)}`,
    a2aOverhead(continued, continuedFloor),
  ],
  [
    "9. Agent server memory: RSS idle after start / after the load of 7 / after that of 8",
    rssOf(served),
    `the in-process graph's own process (same Node flags, same loads): ${rssOf(graphFloor)}`,
    "no target",
  ],
  ...[
    [1, oneReplica],
    [2, twoReplicas],
  ].map(([replicas, rate]): [string, string, string, string] => [
    `${9 + replicas!}. Beacon on PostgreSQL: \`POST /v1/beacon/ingest-traces\`, ${fmt(beaconRows)} transactions in batches of ${BATCH}, ${CLIENTS} clients spread over ${replicas} replica${replicas === 1 ? "" : "s"} on one database`,
    `${fmt(rate!)} tx/s`,
    `PostgreSQL floor (the same rows, one plain multi-row INSERT per batch into the beacon's table, ${CLIENTS} connections): ${fmt(pgFloor)} tx/s (${(rate! / pgFloor).toFixed(2)})`,
    "no target",
  ]),
];

const table = [
  `Measured ${new Date().toISOString()} on ${machine()}${quick ? " (--quick)" : ""}; sidecar, beacon and agent server run from \`bin/egress-agent.js\` on the built \`dist/\`.`,
  "",
  "| figure | result | beside | target |",
  "|---|---|---|---|",
  ...rows.map((cells) => `| ${cells.join(" | ")} |`),
].join("\n");
console.log(table);
if (process.argv.includes("--write")) {
  // The hand-written reading of the figures below the table is kept.
  const results = new URL("RESULTS.md", import.meta.url);
  const previous = existsSync(results) ? readFileSync(results, "utf8") : "";
  const reading = previous.includes("\n## Reading the figures") ? previous.slice(previous.indexOf("\n## Reading the figures")) : "";
  writeFileSync(results, `# Benchmark results\n\n\`npm run bench\` (\`bench/run.ts\`) printed this:\n\n${table}\n${reading}`);
}
