// The privacy filter alone, on a realistic OTLP payload (warning and error logs with platform log lines, failed and
// slow spans with endpoint names, latency and failure metrics by endpoint), against a previous build's filter in
// alternating runs, so the machine's load falls on both alike. Prints items per second, each build's median, and the
// share of constant words the current filter keeps (test/helpers/platform-text.ts).
//   node bench/privacy-filter.ts [OLD_POLICY_TS] [ROUNDS]
// OLD_POLICY_TS: a previous build's src/sidecar/privacy/policy.ts, e.g. from
//   mkdir /tmp/old && git archive <commit> src | tar -x -C /tmp/old && ln -s "$PWD/node_modules" /tmp/old/node_modules
import { filterLogs, filterMetrics, filterTraces, privacyPolicy } from "../src/sidecar/privacy/policy.ts";
import { LogsRequest, MetricsRequest, TracesRequest } from "../src/protocol/otlp.ts";
import { asSent, PLATFORM_TEXT } from "../test/helpers/platform-text.ts";
import { utilityFigure } from "../test/helpers/utility.ts";

type Filters = { filterLogs: typeof filterLogs; filterMetrics: typeof filterMetrics; filterTraces: typeof filterTraces };

const [oldPath, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 15);
const T0 = 1_793_000_000n * 1_000_000_000n;
const str = (key: string, stringValue: string) => ({ key, value: { stringValue } });
// Each line's parameters vary from item to item, as a real log's do: numbers and ids differ, the template repeats.
const line = (i: number) =>
  asSent(PLATFORM_TEXT[i % PLATFORM_TEXT.length]!.replace(/\[\[(\d+)\]\]/g, (_, n: string) => String(Number(n) + i)));
const ids = Array.from({ length: 64 }, (_, i) => `8d3e1f2a-0000-4000-8000-${(123456789000 + i).toString().padStart(12, "0")}`);
const endpoints = (i: number) => [`/threads/${ids[i % 64]}/runs`, `/runs/stream`, `/assistants/${ids[i % 64]}`, "/ok"][i % 4]!;

const ITEMS = 2_000;
const logs = LogsRequest.parse({
  resourceLogs: [
    {
      resource: { attributes: [str("service.name", "langgraph-api"), str("env", "production")] },
      scopeLogs: [
        {
          scope: { name: "langgraph_api.worker", version: "0.4.21" },
          logRecords: Array.from({ length: ITEMS }, (_, i) => ({
            timeUnixNano: (T0 + BigInt(i)).toString(),
            severityNumber: i % 3 === 0 ? 17 : 13,
            severityText: i % 3 === 0 ? "ERROR" : "WARNING",
            body: { stringValue: line(i) },
            attributes: [str("component", "worker"), { key: "pool_size", value: { intValue: "20" } }, str("error_type", "TimeoutError")],
          })),
        },
      ],
    },
  ],
});
const traces = TracesRequest.parse({
  resourceSpans: [
    {
      resource: { attributes: [str("service.name", "langgraph-api")] },
      scopeSpans: [
        {
          scope: { name: "langgraph_api" },
          spans: Array.from({ length: ITEMS }, (_, i) => ({
            traceId: "5b8efff798038103d269b633813fc60c",
            spanId: (0x1000 + i).toString(16).padStart(16, "0"),
            name: `POST ${endpoints(i)}`,
            startTimeUnixNano: T0.toString(),
            endTimeUnixNano: (T0 + 2_000_000_000n).toString(),
            attributes: [str("endpoint", endpoints(i)), str("method", "POST"), str("service_name", "langgraph-api")],
            events: [{ timeUnixNano: T0.toString(), name: "exception" }],
            status: { code: i % 2 === 0 ? 2 : 0, message: i % 2 === 0 ? line(i) : "" },
          })),
        },
      ],
    },
  ],
});
const metrics = MetricsRequest.parse({
  resourceMetrics: [
    {
      resource: { attributes: [str("resource.name", "langgraph-api"), str("env", "production")] },
      scopeMetrics: [
        {
          scope: { name: "platform", version: "1.0.0" },
          metrics: Array.from({ length: ITEMS / 10 }, (_, m) => ({
            name: "platform_http_requests_latency",
            unit: "seconds",
            description: "request latency",
            gauge: {
              dataPoints: Array.from({ length: 10 }, (_, i) => ({
                asDouble: 0.25,
                timeUnixNano: T0.toString(),
                attributes: [str("endpoint", endpoints(m * 10 + i)), str("method", "GET"), str("service_name", "langgraph-api")],
              })),
            },
          })),
        },
      ],
    },
  ],
});

/** Milliseconds one build takes to filter the three requests once. */
function once(filters: Filters, policy: ReturnType<typeof privacyPolicy>): number {
  const started = performance.now();
  filters.filterLogs(logs, policy);
  filters.filterTraces(traces, policy);
  filters.filterMetrics(metrics, policy);
  return performance.now() - started;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const builds: [string, Filters, ReturnType<typeof privacyPolicy>][] = [
  ["current", { filterLogs, filterMetrics, filterTraces }, privacyPolicy({})],
];
if (oldPath) {
  const old = (await import(oldPath)) as Filters & { privacyPolicy: typeof privacyPolicy };
  builds.push(["previous", old, old.privacyPolicy({})]);
}
const times = new Map(builds.map(([name]) => [name, [] as number[]]));
for (let round = 0; round < rounds + 3; round++) {
  // Alternating, the order flipped each round; the first three rounds warm up.
  for (const [name, filters, policy] of round % 2 === 0 ? builds : [...builds].reverse()) {
    const ms = once(filters, policy);
    if (round >= 3) times.get(name)!.push(ms);
  }
}
const items = ITEMS * 3;
for (const [name, list] of times) {
  const ms = median(list);
  console.log(
    `${name}: median ${ms.toFixed(1)} ms for ${items} items (${Math.round((items / ms) * 1000)} items/s), runs ${list.map((t) => t.toFixed(0)).join(" ")}`,
  );
}
const { kept, total } = utilityFigure();
console.log(`utility: ${kept} of ${total} constant words kept (${((kept / total) * 100).toFixed(1)}%)`);
