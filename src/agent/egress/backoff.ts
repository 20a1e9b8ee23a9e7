import type { Options } from "p-retry";

/** The one retry schedule of the sidecar: unlimited attempts, doubling with jitter from min to max, stopped by `signal`. */
export function backoff(minMs: number, maxMs: number, signal: AbortSignal): Options {
  return { retries: Infinity, factor: 2, minTimeout: minMs, maxTimeout: maxMs, randomize: true, signal };
}
