/** A collector's Retry-After is honoured even past maxBackoff, up to this. */
export const MAX_RETRY_AFTER_MS = 60 * 60_000;

/**
 * The wait after the `failures`th failure in a row: `minBackoffMs` doubling with each failure, times a jitter in
 * [1, 2), at most `maxBackoffMs`; or the collector's Retry-After (at most an hour) when that is longer.
 */
export function backoffDelay(
  failures: number,
  schedule: { minBackoffMs: number; maxBackoffMs: number; retryAfterMs?: number | undefined; random?: (() => number) | undefined },
): number {
  const jitter = 1 + (schedule.random ?? Math.random)();
  const backoff = Math.min(
    schedule.maxBackoffMs,
    Math.round(jitter * Math.max(schedule.minBackoffMs, 1) * 2 ** Math.min(failures - 1, 30)),
  );
  return Math.max(backoff, Math.min(schedule.retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
}

/** Resolves after `ms`, or at once when `signal` aborts. On the global timers, so tests run it on simulated time. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
