// Decoding OTLP/HTTP protobuf bodies into the OTLP JSON object form, the bench workload's metrics requests
// (bench/workloads.ts: OTLP_POINTS gauge points each, five attributes a point): the one-pass walk
// (src/protocol/otlp-protobuf.ts) against the decoder before it (the server's counting pass, then protobufjs's decode
// and toObject, then bytes as text: test/helpers/otlp-protobuf-reference.ts), and JSON.parse of the same requests as
// JSON. Rounds alternate, so the machine's load falls on all alike; prints ms per request (wall and CPU time) for
// each round and the medians. No assertions: test/protocol/otlp-protobuf-equivalence.test.ts checks that both decoders agree.
//   node bench/otlp-protobuf-decode.ts [ROUNDS] [REQUESTS]
import { OTLP_REQUESTS, otlpBodies, protobufBodies } from "./workloads.ts";
import { decodeOtlpProtobuf } from "../src/protocol/otlp-protobuf.ts";
import { referenceCount, referenceDecode } from "../test/helpers/otlp-protobuf-reference.ts";

const [roundsArg, requestsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 9);
const json = otlpBodies(Number(requestsArg ?? OTLP_REQUESTS));
const protobuf = protobufBodies(json);
const jsonBuffers = json.map((body) => Buffer.from(body));
/** The server's default http.bodyItems: the counting pass stopped past it. */
const MAX_ITEMS = 500_000;

const ways: Record<string, () => void> = {
  "protobuf, one-pass walk": () => {
    for (const body of protobuf) {
      let messages = 0;
      decodeOtlpProtobuf("metrics", body, (count) => {
        messages += count;
      });
      if (messages > MAX_ITEMS) throw new Error("unexpected");
    }
  },
  "protobuf, before (count, decode, toObject, bytes)": () => {
    for (const body of protobuf) {
      if (referenceCount("metrics", body, MAX_ITEMS) > MAX_ITEMS) throw new Error("unexpected");
      referenceDecode("metrics", body);
    }
  },
  "JSON.parse of the same requests": () => {
    for (const body of jsonBuffers) JSON.parse(body.toString("utf8"));
  },
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
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const bytes = (bodies: readonly Buffer[]) => bodies.reduce((total, body) => total + body.length, 0) / bodies.length;
console.log(`${protobuf.length} requests: protobuf ${bytes(protobuf).toFixed(0)} bytes, JSON ${bytes(jsonBuffers).toFixed(0)} bytes each`);
// CPU time counts the garbage collector's helper threads too; on a shared machine it varies less than wall time.
for (const name of Object.keys(ways)) {
  console.log(`${name}: median ${median(wall[name]!).toFixed(3)} ms per request (CPU ${median(cpu[name]!).toFixed(3)} ms)`);
}
