// The load the agent server's figures and their in-process floor both get (bench/agent-server.ts,
// bench/agent-graph-floor.ts). No imports: the floor's process holds the graph and this, nothing else.

/** One turn: sends `text`, continuing `previous` (undefined on a conversation's first turn); resolves to what the next turn continues. */
export type Turn<C> = (text: string, previous: C | undefined) => Promise<C>;

export interface Load {
  seconds: number;
  /** Every turn's latency, in the order they ended. */
  latenciesMs: number[];
}

/**
 * `conversations` conversations of `turns` turns each, `clients` at a time: each client takes the next conversation
 * and sends its turns one after another (a turn waits for the answer to the previous one).
 */
export async function converse<C>(conversations: number, turns: number, clients: number, turn: Turn<C>): Promise<Load> {
  const latenciesMs: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < conversations) {
        const conversation = next++;
        let previous: C | undefined;
        for (let t = 1; t <= turns; t++) {
          const sent = performance.now();
          previous = await turn(`Note ${t} of conversation ${conversation}: buy milk, call the plumber`, previous);
          latenciesMs.push(performance.now() - sent);
        }
      }
    }),
  );
  return { seconds: (performance.now() - started) / 1000, latenciesMs };
}

/** The `p`-th percentile (0-100) of `values`, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export interface LoadSummary {
  perSecond: number;
  medianMs: number;
  p99Ms: number;
}

export const summarize = (load: Load): LoadSummary => ({
  perSecond: load.latenciesMs.length / load.seconds,
  medianMs: percentile(load.latenciesMs, 50),
  p99Ms: percentile(load.latenciesMs, 99),
});
