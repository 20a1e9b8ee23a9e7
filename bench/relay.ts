// The OTLP relay alone, for trying a change: `node bench/relay.ts [json|protobuf|both] [runs]` prints, per run, the
// relay beside its same-run JSON floor, the intake, and the sidecar's and the beacon's CPU seconds per relayed MB.
// To compare two builds, run it from each checkout in turn (alternating runs: this machine's speed drifts).
// `PROFILE=<dir>` writes a CPU profile of the sidecar and of the beacon there (--cpu-prof).
import { mkdirSync } from "node:fs";
import { buildDist } from "../scripts/build.ts";
import { cliNodeFlags, useCli } from "../test/helpers/processes.ts";
import { contentTypeOf, httpRelay } from "./floors.ts";
import { fmt, mb } from "./measure.ts";
import { otlpRelay, type RelayRun } from "./sidecar.ts";
import { otlpBodies, protobufBodies } from "./workloads.ts";

const mode = process.argv[2] ?? "json";
const runs = Number(process.argv[3] ?? 1);
await buildDist();
useCli(new URL("../bin/egress-agent.js", import.meta.url).pathname);
const json = otlpBodies();
const protobuf = protobufBodies(json);
// Protobuf is reported per MB of the same points as JSON, so both rows read on one scale.
const megabytes = mb(json.reduce((total, body) => total + Buffer.byteLength(body), 0));
if (process.env.PROFILE) {
  mkdirSync(process.env.PROFILE, { recursive: true });
  process.env.NODE_OPTIONS = `--cpu-prof --cpu-prof-dir=${process.env.PROFILE}`;
}

const row = (name: string, run: RelayRun, floorSeconds?: number) =>
  [
    `${name}: relay ${fmt(megabytes / run.seconds, 1)} MB/s`,
    floorSeconds === undefined ? "" : ` (${fmt(floorSeconds / run.seconds, 2)} of the floor, ${fmt(megabytes / floorSeconds, 1)} MB/s)`,
    `, intake ${fmt(megabytes / run.intakeSeconds, 1)} MB/s`,
    `, CPU s/MB sidecar ${fmt(run.cpuSeconds / megabytes, 3)} beacon ${fmt(run.beaconCpuSeconds / megabytes, 3)}`,
    `, peak RSS ${fmt(run.peakRss / 2 ** 20)} MiB`,
  ].join("");

for (let i = 0; i < runs; i++) {
  if (mode !== "protobuf") {
    const floor = await httpRelay(json, "json", cliNodeFlags());
    console.log(row("json", await otlpRelay(json, contentTypeOf("json")), floor.seconds));
  }
  if (mode !== "json") console.log(row("protobuf", await otlpRelay(protobuf, contentTypeOf("protobuf"))));
}
