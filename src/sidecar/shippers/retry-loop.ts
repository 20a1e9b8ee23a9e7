import { sleep } from "../egress/backoff.ts";

/** A receiver's Retry-After is honoured even past maxBackoff, up to this. */
export const MAX_RETRY_AFTER_MS = 60 * 60_000;

export interface RetrySchedule {
  minMs: number;
  maxMs: number;
  /** Stopping: ends a wait at once, and the loop with the last error. */
  signal: AbortSignal;
  random?: () => number;
}

/**
 * The wait after the `failures`th failure in a row: `minMs` doubling with each failure, times a jitter in [1, 2), at
 * most `maxMs` (the license check's schedule too, src/sidecar/egress/backoff.ts).
 */
export function backoffDelay(failures: number, schedule: RetrySchedule): number {
  const jitter = 1 + (schedule.random ?? Math.random)();
  return Math.min(schedule.maxMs, Math.round(jitter * Math.max(schedule.minMs, 1) * 2 ** (failures - 1)));
}

/**
 * Runs `attempt` until it succeeds. After each failure `retryAfter(error)` decides: undefined ends the loop with the
 * error; a number (the receiver's Retry-After in ms, or 0) means wait the longer of it (capped) and the backoff, then
 * try again. Written out rather than a library's loop so that the decision and the wait read in one place.
 */
export async function retryLoop<T>(
  attempt: () => Promise<T>,
  schedule: RetrySchedule,
  retryAfter: (error: unknown) => number | undefined,
): Promise<T> {
  for (let failures = 1; ; failures++) {
    try {
      return await attempt();
    } catch (error) {
      const receiverWaitMs = retryAfter(error);
      if (receiverWaitMs === undefined || schedule.signal.aborted) throw error;
      await sleep(Math.max(backoffDelay(failures, schedule), Math.min(receiverWaitMs, MAX_RETRY_AFTER_MS)), schedule.signal);
      if (schedule.signal.aborted) throw error;
    }
  }
}
