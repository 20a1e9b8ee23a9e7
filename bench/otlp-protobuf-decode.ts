// Decoding OTLP/HTTP protobuf bodies into the OTLP JSON object form, the bench workload's metrics requests
// (bench/workloads.ts: OTLP_POINTS gauge points each, five attributes a point): the one-pass walk
// (src/protocol/otlp-protobuf.ts) against the decoder before it (the server's counting pass, then protobufjs's decode
// and toObject, then bytes as text: test/helpers/otlp-protobuf-reference.ts), and JSON.parse of the same requests as
// JSON; each alone, then followed by parseExport as the receivers do. Rounds alternate, so the machine's load falls
// on all alike; prints ms per request (wall and CPU time) for each round and the medians. No assertions:
// test/protocol/otlp-protobuf-equivalence.test.ts checks that both decoders agree.
//   node bench/otlp-protobuf-decode.ts [ROUNDS] [REQUESTS]
import { median } from "./measure.ts";
import { OTLP_REQUESTS, otlpBodies, protobufBodies } from "./workloads.ts";
import { decodeOtlpProtobuf } from "../src/protocol/otlp-protobuf.ts";
import { parseExport } from "../src/protocol/otlp-request.ts";
import { countOtlpMessages } from "../src/protocol/otlp-wire-count.ts";
import { referenceDecode } from "../test/helpers/otlp-protobuf-reference.ts";

const [roundsArg, requestsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 9);
const json = otlpBodies(Number(requestsArg ?? OTLP_REQUESTS));
const protobuf = protobufBodies(json);
const jsonBuffers = json.map((body) => Buffer.from(body));
/** The server's default http.bodyItems: the counting pass stopped past it. */
const MAX_ITEMS = 500_000;

/** The new decoder, charging its messages as the server's account does (413 past http.bodyItems). */
function decode(body: Buffer): unknown {
  let messages = 0;
  return decodeOtlpProtobuf("metrics", body, (count) => {
    messages += count;
    if (messages > MAX_ITEMS) throw new Error("unexpected");
  });
}

/** The decoder before: the server's counting pass, then the decode. */
function decodeBefore(body: Buffer): unknown {
  if (countOtlpMessages("metrics", body, MAX_ITEMS) > MAX_ITEMS) throw new Error("unexpected");
  return referenceDecode("metrics", body);
}

const parseJson = (body: Buffer): unknown => JSON.parse(body.toString("utf8"));

/** One round of a way: `run` on every body. */
const each = (bodies: readonly Buffer[], run: (body: Buffer) => unknown) => () => {
  for (const body of bodies) run(body);
};
// Each alone, then with what the receiver does next to either encoding (parseExport: the OTLP schema, item by item).
const ways: Record<string, () => void> = {
  "protobuf, one-pass walk": each(protobuf, decode),
  "protobuf, before (count, decode, toObject, bytes)": each(protobuf, decodeBefore),
  "JSON.parse of the same requests": each(jsonBuffers, parseJson),
  "walk + parseExport": each(protobuf, (body) => parseExport("metrics", decode(body))),
  "before + parseExport": each(protobuf, (body) => parseExport("metrics", decodeBefore(body))),
  "JSON.parse + parseExport": each(jsonBuffers, (body) => parseExport("metrics", parseJson(body))),
};

const wall: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((name) => [name, []]));
const cpu: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((name) => [name, []]));
for (const run of Object.values(ways)) run(); // warm-up
for (let round = 0; round < rounds; round++) {
  const line: string[] = [];
  for (const [name, run] of Object.entries(ways)) {
    const started = performance.now();
    const cpuStarted = process.cpuUsage();
    run();
    const used = process.cpuUsage(cpuStarted);
    wall[name]!.push((performance.now() - started) / protobuf.length);
    cpu[name]!.push((used.user + used.system) / 1000 / protobuf.length);
    line.push(`${wall[name]!.at(-1)!.toFixed(3)} (cpu ${cpu[name]!.at(-1)!.toFixed(3)})`);
  }
  console.log(`round ${round + 1}: ${line.join("  ")} ms per request`);
}
const bytes = (bodies: readonly Buffer[]) => bodies.reduce((total, body) => total + body.length, 0) / bodies.length;
console.log(`${protobuf.length} requests: protobuf ${bytes(protobuf).toFixed(0)} bytes, JSON ${bytes(jsonBuffers).toFixed(0)} bytes each`);
// CPU time counts the garbage collector's helper threads too; on a shared machine it varies less than wall time.
for (const name of Object.keys(ways)) {
  console.log(`${name}: median ${median(wall[name]!).toFixed(3)} ms per request (CPU ${median(cpu[name]!).toFixed(3)} ms)`);
}
