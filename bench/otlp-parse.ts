// parseExport alone on the relay benchmark's workload (bench/workloads.ts otlpBodies(): OTLP_REQUESTS metrics requests
// of OTLP_POINTS points), the zod-free fast path (src/protocol/otlp-fast*.ts) against the all-zod parseExport it
// replaced (test/helpers/otlp-zod-export.ts), in alternating rounds so the machine's load falls on both alike. The
// bodies are JSON.parse'd once beforehand: a round times parseExport only. Prints each round, each one's median in
// ms per MB of JSON, and the garbage collection inside the rounds (PerformanceObserver 'gc' entries).
//   node bench/otlp-parse.ts [ROUNDS]
import { isDeepStrictEqual } from "node:util";
import { PerformanceObserver, performance } from "node:perf_hooks";
import { parseExport } from "../src/protocol/otlp-request.ts";
import { parseExportWithZod } from "../test/helpers/otlp-zod-export.ts";
import { OTLP_POINTS, OTLP_REQUESTS, otlpBodies } from "./workloads.ts";

const rounds = Number(process.argv[2] ?? 5);
const bodies = otlpBodies();
const mb = bodies.reduce((n, body) => n + Buffer.byteLength(body), 0) / 1e6;
const parseStart = performance.now();
const raws: unknown[] = bodies.map((body) => JSON.parse(body));
const jsonParseMs = performance.now() - parseStart;

// The workload's requests also carry the fixture's one-point counter (test/helpers/fixtures.ts metricsRequest()).
const expectedPoints = raws.reduce<number>((n, raw) => n + parseExportWithZod("metrics", raw).accepted, 0);
const contenders = { zod: parseExportWithZod, fast: parseExport } as const;
type Name = keyof typeof contenders;

const gcs: { start: number; duration: number }[] = [];
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcs.push({ start: entry.startTime, duration: entry.duration });
});
observer.observe({ entryTypes: ["gc"] });
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

interface Round {
  ms: number;
  gcMs: number;
  gcCount: number;
}
const results: Record<Name, Round[]> = { zod: [], fast: [] };

async function round(name: Name): Promise<void> {
  const parse = contenders[name];
  await settle();
  const start = performance.now();
  let accepted = 0;
  for (const raw of raws) accepted += parse("metrics", raw).accepted;
  const end = performance.now();
  await settle(); // the observer hears of the round's last collections
  if (accepted !== expectedPoints) console.log(`${name}: ${accepted} points accepted, not ${expectedPoints}?`);
  const inRound = gcs.filter((gc) => gc.start >= start && gc.start < end);
  const gcMs = inRound.reduce((n, gc) => n + gc.duration, 0);
  results[name].push({ ms: end - start, gcMs, gcCount: inRound.length });
  console.log(
    `  ${name.padEnd(4)} ${(end - start).toFixed(0).padStart(6)} ms, GC ${gcMs.toFixed(0).padStart(4)} ms in ${inRound.length} collections`,
  );
}

const median = (values: number[]) => values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)]!;

console.log(
  `${OTLP_REQUESTS} metrics requests of ${OTLP_POINTS} points, ${mb.toFixed(1)} MB of JSON (JSON.parse once: ${jsonParseMs.toFixed(0)} ms)`,
);
const sample = raws[0];
console.log(
  `same answer on the first request: ${isDeepStrictEqual(parseExport("metrics", sample), parseExportWithZod("metrics", sample))}`,
);
await round("zod"); // warm-up, both
await round("fast");
results.zod.length = 0;
results.fast.length = 0;
for (let r = 0; r < rounds; r++) {
  console.log(`round ${r + 1}`);
  for (const name of (r % 2 === 0 ? ["zod", "fast"] : ["fast", "zod"]) as Name[]) await round(name);
}
observer.disconnect();
console.log("median of rounds:");
for (const name of Object.keys(contenders) as Name[]) {
  const ms = median(results[name].map((r) => r.ms));
  const gcMs = median(results[name].map((r) => r.gcMs));
  const gcShare = median(results[name].map((r) => r.gcMs / r.ms));
  const points = expectedPoints / (ms / 1000);
  console.log(
    `  ${name.padEnd(4)} ${ms.toFixed(0)} ms = ${(ms / mb).toFixed(1)} ms/MB, ${(points / 1e6).toFixed(2)} M points/s; ` +
      `GC ${gcMs.toFixed(0)} ms (${(gcShare * 100).toFixed(0)}% of the round) in ${median(results[name].map((r) => r.gcCount))} collections`,
  );
}
const speedup = median(results.zod.map((r) => r.ms)) / median(results.fast.map((r) => r.ms));
console.log(`fast path: ${speedup.toFixed(1)}x the all-zod parseExport`);
