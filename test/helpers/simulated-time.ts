import { mock } from "node:test";

/** A real turn of the event loop (setImmediate is left unmocked), so that work a fired timer started can settle. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The injected clock of the loop tests: node:test's mock timers stand in for setTimeout, setInterval and Date
 * (so p-retry's backoff and every `Date.now` default run on it too), and `advance` moves simulated time in steps,
 * letting each step's promise chains settle. A loop that schedules itself at once shows as at least one request
 * per step, so a hot loop cannot hide behind a coarse step.
 */
export class SimulatedTime {
  #now: number;

  private constructor(startMs: number) {
    this.#now = startMs;
  }

  static start(startMs = Date.parse("2026-11-01T00:00:00Z")): SimulatedTime {
    mock.timers.enable({ apis: ["setTimeout", "setInterval", "Date"], now: startMs });
    return new SimulatedTime(startMs);
  }

  now = (): number => this.#now;

  /** Lets pending promise chains run without moving the clock. */
  async settle(turns = 8): Promise<void> {
    for (let i = 0; i < turns; i++) await turn();
  }

  /** Moves the clock forward `ms` in steps of `stepMs`, firing every timer due on the way. */
  async advance(ms: number, stepMs = 1_000): Promise<void> {
    await this.settle();
    for (let done = 0; done < ms; done += stepMs) {
      const step = Math.min(stepMs, ms - done);
      this.#now += step;
      mock.timers.tick(step);
      await this.settle();
    }
  }

  stop(): void {
    mock.timers.reset();
  }
}

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
