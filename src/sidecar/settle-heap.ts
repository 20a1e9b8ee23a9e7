/** Node's collector when exposed (bin/egress-agent.js makes it, as `--expose-gc` would). */
type Collect = (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => unknown;

export interface SettleOptions {
  /** From start to the first try. */
  delayMs?: number;
  /** True when nothing is being served: the collection stops the thread for tens of milliseconds. */
  quiet?: () => boolean;
  /** While not quiet, tried again this often, and not after `giveUpMs` from start (a busy sidecar uses its young
   * generation: there is nothing idle to give back). */
  retryMs?: number;
  giveUpMs?: number;
  collect?: Collect | undefined;
}

/**
 * One memory-reducing collection a few seconds after start, once the sidecar has loaded what it runs on and sits
 * idle. Starting grows V8's young generation to its cap (`--max-semi-space-size`, bin/egress-agent.js) and V8 keeps
 * it while little is allocated; only a collection that aims to reduce memory gives it back. It is what lets the
 * sidecar have semi-spaces sized for throughput and still idle small (bench/RESULTS.md). It waits for a quiet moment:
 * two full collections (about 50 ms) in the middle of the instance's first exports would stall every one of them.
 * Without an exposed collector (the tests run the TypeScript source, not the entry point) nothing is scheduled.
 */
export function settleHeapSoon(options: SettleOptions = {}): { close(): void } {
  const { delayMs = 3_000, quiet = () => true, retryMs = 1_000, giveUpMs = 10 * 60_000 } = options;
  const collect = "collect" in options ? options.collect : (globalThis as { gc?: Collect }).gc;
  if (!collect) return { close() {} };
  let waited = delayMs;
  const attempt = () => {
    if (quiet()) {
      collect({ type: "major", execution: "sync", flavor: "last-resort" });
      return;
    }
    waited += retryMs;
    if (waited > giveUpMs) return;
    timer = setTimeout(attempt, retryMs);
    timer.unref();
  };
  let timer = setTimeout(attempt, delayMs);
  timer.unref();
  return { close: () => clearTimeout(timer) };
}
