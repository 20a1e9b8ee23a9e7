// How the bench reports: one Figure per measured number, rendered as the Markdown table and, with `--json`, as
// `{name, value, unit, floor, ratio}` rows for scripts. Goals are ratios to floors of the same run (DEVELOPERS.md):
// absolute numbers move with the machine's hour, ratios do not.

export interface Figure {
  /** Stable machine name, e.g. `relay.json`. */
  name: string;
  value: number;
  unit: string;
  /** The same work done by the bare parts in this run, in `unit`; null where there is none. */
  floor: number | null;
  /** value / floor, or floor / value where less is better (seconds, CPU per MB); null without a floor. */
  ratio: number | null;
  /** What the table shows for this figure's goal; "no target" where none is set. */
  goal: string;
  /** Whether the goal is met; undefined where there is no goal. */
  met?: boolean;
}

/** A rate (more is better) beside its floor, with an optional minimum ratio as its goal. */
export function rate(name: string, value: number, unit: string, floor: number | null, minRatio?: number, floorName = "floor"): Figure {
  const ratio = floor ? value / floor : null;
  return goalOf({ name, value, unit, floor, ratio, goal: "no target" }, minRatio, floorName);
}

/** A cost (less is better: seconds, CPU per MB) beside its floor; the ratio is floor / value so that 1 is the floor. */
export function cost(name: string, value: number, unit: string, floor: number | null, minRatio?: number, floorName = "floor"): Figure {
  const ratio = floor && value ? floor / value : null;
  return goalOf({ name, value, unit, floor, ratio, goal: "no target" }, minRatio, floorName);
}

/** A figure with an absolute ceiling (memory, where the issue sets one) and its floor for reading only. */
export function ceiling(name: string, value: number, unit: string, floor: number | null, max: number): Figure {
  const ratio = floor ? value / floor : null;
  return { name, value, unit, floor, ratio, goal: `≤ ${max} ${unit}`, met: value <= max };
}

function goalOf(figure: Figure, minRatio: number | undefined, floorName: string): Figure {
  if (minRatio === undefined || figure.ratio === null) return figure;
  return { ...figure, goal: `≥ ${minRatio} of ${floorName}`, met: figure.ratio >= minRatio };
}

const verdict = (met: boolean | undefined) => (met === undefined ? "" : met ? ": met" : ": **missed**");

/** The table's target cell for the figures of one row. */
export function targets(figures: readonly Figure[]): string {
  const set = figures.filter((f) => f.met !== undefined);
  if (set.length === 0) return "no target";
  return set.map((f) => `${f.name} ${f.goal}${verdict(f.met)}`).join("; ");
}

/** The rows for `--json`: every figure, numbers rounded to what the measurement can tell. */
export function jsonRows(figures: readonly Figure[]): string {
  const round = (n: number | null) => (n === null ? null : Number(n.toPrecision(4)));
  return JSON.stringify(
    figures.map(({ name, value, unit, floor, ratio, goal, met }) => ({
      name,
      value: round(value),
      unit,
      floor: round(floor),
      ratio: round(ratio),
      goal: met === undefined ? null : goal,
      met: met ?? null,
    })),
    null,
    2,
  );
}
