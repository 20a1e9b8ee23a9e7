import type { Options } from "p-retry";

/** The one retry schedule of the sidecar: unlimited attempts, doubling with jitter from min to max, stopped by `signal`. */
export function backoff(minMs: number, maxMs: number, signal: AbortSignal): Options {
  return { retries: Infinity, factor: 2, minTimeout: minMs, maxTimeout: maxMs, randomize: true, signal };
}

/** Resolves after `ms` (never, for Infinity), or at once when `signal` aborts: every wait of the sidecar's loops. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
