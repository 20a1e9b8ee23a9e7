// parseExport alone on the relay benchmark's workload (bench/workloads.ts otlpBodies(): OTLP_REQUESTS metrics requests
// of OTLP_POINTS points), the zod-free fast path (src/protocol/otlp-fast*.ts) against the all-zod parseExport it
// replaced (test/helpers/otlp-zod-export.ts) and, when OTLP_BASELINE names another checkout's otlp-request.ts, against
// that one, in alternating rounds so the machine's load falls on all alike. Two workloads: the instance's requests
// (what the sidecar parses) and the sidecar's output for them, privacy-filtered and serialised (what the beacon
// parses: already normalised). The bodies are JSON.parse'd once beforehand: a round times parseExport only. Prints
// each round, and each one's median: ms per MB of JSON, garbage collection inside the rounds (PerformanceObserver
// 'gc' entries) and bytes allocated (the heap's growth plus what each collection freed: v8.GCProfiler).
//   node bench/otlp-parse.ts [ROUNDS]
//   git archive <commit> src | tar -x -C /tmp/base && ln -s "$PWD/node_modules" /tmp/base/
//   OTLP_BASELINE=/tmp/base/src/protocol/otlp-request.ts node bench/otlp-parse.ts [ROUNDS]
import { isDeepStrictEqual } from "node:util";
import v8 from "node:v8";
import type { MetricsRequest } from "../src/protocol/otlp.ts";
import { parseExport } from "../src/protocol/otlp-request.ts";
import { filterMetrics, privacyPolicy } from "../src/sidecar/privacy/policy.ts";
import { parseExportWithZod } from "../test/helpers/otlp-zod-export.ts";
import { median, timedWithGc } from "./measure.ts";
import { OTLP_POINTS, OTLP_REQUESTS, otlpBodies } from "./workloads.ts";

type Parse = (signal: "metrics", raw: unknown) => { accepted: number; request: unknown };
const rounds = Number(process.argv[2] ?? 5);
// OTLP_ZOD=0 leaves the all-zod one out (ten times slower: most of a run).
const contenders: Record<string, Parse> =
  process.env.OTLP_ZOD === "0" ? { fast: parseExport } : { zod: parseExportWithZod, fast: parseExport };
if (process.env.OTLP_BASELINE) {
  contenders.base = ((await import(process.env.OTLP_BASELINE)) as { parseExport: Parse }).parseExport;
}
const names = Object.keys(contenders);

const instanceBodies = otlpBodies();
const policy = privacyPolicy();
const sidecarBodies = instanceBodies.map((body) =>
  JSON.stringify(filterMetrics(parseExport("metrics", JSON.parse(body)).request as MetricsRequest, policy).request),
);
const workloads = { instance: instanceBodies, sidecar: sidecarBodies };
type Workload = keyof typeof workloads;

interface Round {
  ms: number;
  gcMs: number;
  gcCount: number;
  allocatedMb: number;
}

async function round(parse: Parse, raws: unknown[], expectedPoints: number): Promise<Round> {
  const profiler = new v8.GCProfiler();
  let usedBefore = 0;
  const timed = await timedWithGc(() => {
    profiler.start();
    usedBefore = v8.getHeapStatistics().used_heap_size;
    let accepted = 0;
    for (const raw of raws) accepted += parse("metrics", raw).accepted;
    return accepted;
  });
  const usedAfter = v8.getHeapStatistics().used_heap_size;
  const freed = (profiler.stop()?.statistics ?? []).reduce(
    (n, gc) => n + gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize,
    0,
  );
  if (timed.value !== expectedPoints) console.log(`${timed.value} points accepted, not ${expectedPoints}?`);
  return { ms: timed.ms, gcMs: timed.gcMs, gcCount: timed.gcCount, allocatedMb: (usedAfter - usedBefore + freed) / 1e6 };
}

for (const workload of Object.keys(workloads) as Workload[]) {
  const bodies = workloads[workload];
  const mb = bodies.reduce((n, body) => n + Buffer.byteLength(body), 0) / 1e6;
  const raws: unknown[] = bodies.map((body) => JSON.parse(body));
  // The workload's requests also carry the fixture's one-point counter (test/helpers/fixtures.ts metricsRequest()).
  const expectedPoints = raws.reduce<number>((n, raw) => n + parseExportWithZod("metrics", raw).accepted, 0);
  const canonical = raws.filter((raw) => parseExport("metrics", raw).canonical).length;
  console.log(
    `${workload}: ${OTLP_REQUESTS} metrics requests of ${OTLP_POINTS} points, ${mb.toFixed(1)} MB of JSON, ${canonical} canonical`,
  );
  const { canonical: _, ...sample } = parseExport("metrics", raws[0]);
  console.log(`  same answer on the first request: ${isDeepStrictEqual(sample, parseExportWithZod("metrics", raws[0]))}`);
  const results: Record<string, Round[]> = Object.fromEntries(names.map((name) => [name, []]));
  for (const name of names) await round(contenders[name]!, raws, expectedPoints); // warm-up
  for (let r = 0; r < rounds; r++) {
    for (const name of r % 2 === 0 ? names : names.toReversed()) {
      const result = await round(contenders[name]!, raws, expectedPoints);
      results[name]!.push(result);
      console.log(
        `  round ${r + 1} ${name.padEnd(4)} ${result.ms.toFixed(0).padStart(5)} ms, GC ${result.gcMs.toFixed(0).padStart(4)} ms in ` +
          `${result.gcCount} collections, ${result.allocatedMb.toFixed(0)} MB allocated`,
      );
    }
  }
  console.log(`  median of rounds (${workload}):`);
  for (const name of names) {
    const of = (f: (r: Round) => number) => median(results[name]!.map(f));
    const ms = of((r) => r.ms);
    console.log(
      `    ${name.padEnd(4)} ${ms.toFixed(0)} ms = ${(ms / mb).toFixed(1)} ms/MB, ${(expectedPoints / ms / 1000).toFixed(2)} M points/s; ` +
        `GC ${of((r) => r.gcMs).toFixed(0)} ms (${(of((r) => r.gcMs / r.ms) * 100).toFixed(0)}%) in ${of((r) => r.gcCount)} collections; ` +
        `${of((r) => r.allocatedMb).toFixed(0)} MB allocated (${((of((r) => r.allocatedMb) * 1e6) / expectedPoints).toFixed(0)} B/point)`,
    );
  }
}
