// Request-body validation alone on the ingest benchmark's workload (bench/workloads.ts transactionBodies(): BATCHES
// bodies of BATCH trace transactions), as the two billing routes run it (parseRequest): the schema alone ("zod")
// against the zod-free fast path (src/protocol/trace-transaction-fast.ts), for POST /v1/transactions
// (TransactionsRequest) and POST /v1/beacon/ingest-traces (IngestTracesRequest, the same records with a license).
// Alternating rounds so the machine's load falls on both alike; the bodies are JSON.parse'd once beforehand. Prints
// each round, then each one's median in ms per 1,000 transactions and the garbage collection inside the rounds.
//   node bench/transactions-parse.ts [ROUNDS]
import { isDeepStrictEqual } from "node:util";
import { parseRequest } from "../src/http/validate.ts";
import { TransactionsRequest } from "../src/protocol/local-api.ts";
import { IngestTracesRequest } from "../src/protocol/trace-transaction.ts";
import { fastIngestTracesRequest, fastTransactionsRequest } from "../src/protocol/trace-transaction-fast.ts";
import { median, timedWithGc } from "./measure.ts";
import { BATCH, BATCHES, INGEST_TOTAL, transactionBodies } from "./workloads.ts";

const rounds = Number(process.argv[2] ?? 5);
const intake: unknown[] = transactionBodies().map((body) => JSON.parse(body));
const beacon: unknown[] = intake.map((body) => ({ license: "lic_bench", ...(body as object) }));

const contenders = {
  "intake zod": () => intake.map((raw) => parseRequest(TransactionsRequest, raw)),
  "intake fast": () => intake.map((raw) => parseRequest(TransactionsRequest, raw, "body", fastTransactionsRequest)),
  "beacon zod": () => beacon.map((raw) => parseRequest(IngestTracesRequest, raw)),
  "beacon fast": () => beacon.map((raw) => parseRequest(IngestTracesRequest, raw, "body", fastIngestTracesRequest)),
} as const;
type Name = keyof typeof contenders;
const names = Object.keys(contenders) as Name[];

interface Round {
  ms: number;
  gcMs: number;
  gcCount: number;
}
const results = Object.fromEntries(names.map((name) => [name, [] as Round[]])) as Record<Name, Round[]>;

async function round(name: Name): Promise<void> {
  const { value: parsed, ms, gcMs, gcCount } = await timedWithGc(contenders[name]);
  if (parsed.length !== BATCHES) console.log(`${name}: ${parsed.length} bodies parsed, not ${BATCHES}?`);
  results[name].push({ ms, gcMs, gcCount });
  console.log(`  ${name.padEnd(11)} ${ms.toFixed(0).padStart(5)} ms, GC ${gcMs.toFixed(0).padStart(3)} ms in ${gcCount} collections`);
}

console.log(`${BATCHES} bodies of ${BATCH} trace transactions`);
console.log(
  `same output on every body: intake ${isDeepStrictEqual(contenders["intake zod"](), contenders["intake fast"]())}, ` +
    `beacon ${isDeepStrictEqual(contenders["beacon zod"](), contenders["beacon fast"]())}`,
);
for (const name of names) await round(name); // warm-up
for (const name of names) results[name].length = 0;
for (let r = 0; r < rounds; r++) {
  console.log(`round ${r + 1}`);
  for (const name of r % 2 === 0 ? names : names.toReversed()) await round(name);
}
console.log("median of rounds, per 1,000 transactions:");
for (const name of names) {
  const ms = median(results[name].map((r) => r.ms));
  const gcMs = median(results[name].map((r) => r.gcMs));
  console.log(
    `  ${name.padEnd(11)} ${((ms / INGEST_TOTAL) * 1000).toFixed(2)} ms (GC ${((gcMs / INGEST_TOTAL) * 1000).toFixed(2)} ms); round ${ms.toFixed(0)} ms`,
  );
}
for (const route of ["intake", "beacon"] as const) {
  const speedup = median(results[`${route} zod`].map((r) => r.ms)) / median(results[`${route} fast`].map((r) => r.ms));
  console.log(`${route}: fast path ${speedup.toFixed(1)}x the schema alone`);
}
