const PRELOAD = new URL("./fast-clock-preload.ts", import.meta.url).pathname;

/**
 * A clock running `rate` times faster than real time from `epoch` on, for compressing hours into seconds. The
 * sidecar takes it as its injected `now`; a child process (the beacon) gets the same clock through `env`, which
 * preloads `fast-clock-preload.ts`, so the tokens it issues expire on the same clock. Timers stay real.
 */
export interface FastClock {
  rate: number;
  now(): number;
  /** Real milliseconds that pass while this clock advances `ms`. */
  real(ms: number): number;
  /** Environment for a child process that must share this clock. */
  env: NodeJS.ProcessEnv;
}

export function fastClock(rate: number, epoch = Date.now()): FastClock {
  return {
    rate,
    now: () => epoch + (Date.now() - epoch) * rate,
    real: (ms) => ms / rate,
    env: {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${PRELOAD}`.trim(),
      FAST_CLOCK_EPOCH: String(epoch),
      FAST_CLOCK_RATE: String(rate),
    },
  };
}

export const minutes = (n: number) => n * 60_000;
