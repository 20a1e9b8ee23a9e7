import type { SetClockTimeout } from "../../../src/clock.ts";

const PRELOAD = new URL("./fast-clock-preload.ts", import.meta.url).pathname;

/**
 * A clock running `rate` times faster than real time from `epoch` on, for compressing hours into seconds. The
 * sidecar takes it as its injected `now` (and `setTimeout`, for the schedules due at a time on it); a child
 * process (the beacon) gets the same clock through `env`, which preloads `fast-clock-preload.ts`, so the tokens it
 * issues expire on the same clock. Other timers stay real.
 */
export interface FastClock {
  rate: number;
  now(): number;
  /** setTimeout on this clock: `ms` of it, `ms / rate` real. */
  setTimeout: SetClockTimeout;
  /** Real milliseconds that pass while this clock advances `ms`. */
  real(ms: number): number;
  /** Environment for a child process that must share this clock. */
  env: NodeJS.ProcessEnv;
}

export function fastClock(rate: number, epoch = Date.now()): FastClock {
  return {
    rate,
    now: () => epoch + (Date.now() - epoch) * rate,
    setTimeout: (callback, ms) => setTimeout(callback, ms / rate),
    real: (ms) => ms / rate,
    env: {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${PRELOAD}`.trim(),
      FAST_CLOCK_EPOCH: String(epoch),
      FAST_CLOCK_RATE: String(rate),
    },
  };
}

export const minutes = (n: number) => n * 60_000;
