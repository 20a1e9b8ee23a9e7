/** Node's collector when exposed (bin/egress-agent.js makes it, as `--expose-gc` would). */
type Collect = (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => unknown;

/**
 * One memory-reducing collection a few seconds after start, once the sidecar has loaded what it runs on and sits
 * idle. Starting grows V8's young generation to its cap (`--max-semi-space-size`, bin/egress-agent.js) and V8 keeps
 * it while little is allocated; only a collection that aims to reduce memory gives it back. It is what lets the
 * sidecar have semi-spaces sized for throughput and still idle small (bench/RESULTS.md). Without it (the tests run the
 * TypeScript source, not the entry point) nothing is scheduled.
 */
export function settleHeapSoon(delayMs = 3_000, collect = (globalThis as { gc?: Collect }).gc): { close(): void } {
  if (!collect) return { close() {} };
  const timer = setTimeout(() => collect({ type: "major", execution: "sync", flavor: "last-resort" }), delayMs);
  timer.unref();
  return { close: () => clearTimeout(timer) };
}
