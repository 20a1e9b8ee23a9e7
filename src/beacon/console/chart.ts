import { html, type SafeHtml } from "./html.ts";

/** One stack of the chart: a license's traces, month by month (the same months, in order, as the chart's). */
export interface ChartSeries {
  name: string;
  values: readonly number[];
}

export interface BarChartData {
  /** Its accessible name: the svg's <title>. */
  title: string;
  /** The x axis: "2026-10", ... */
  months: readonly string[];
  series: readonly ChartSeries[];
  /** What one unit is, for the bars' titles ("traces"). */
  unit: string;
}

/** Colours told apart also by people with the common colour-vision deficiencies (Okabe and Ito's palette). */
export const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"];

const WIDTH = 720;
const HEIGHT = 260;
const LEFT = 64;
const RIGHT = 12;
const TOP = 12;
const BOTTOM = 36;

/** The smallest 1, 2 or 5 times a power of ten at or above `max`: the y axis ends on a round number. */
export function niceCeiling(max: number): number {
  if (max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

// Made on first use, not when the module loads: every process of the CLI loads this module (the sidecar too), and a
// NumberFormat brings in ICU's number data, about 6 MiB of the node binary paged in (bench/: the sidecar's idle RSS).
let formats: { compact: Intl.NumberFormat; whole: Intl.NumberFormat } | undefined;
const numberFormats = () => {
  formats ??= {
    compact: new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 1 }),
    whole: new Intl.NumberFormat("en"),
  };
  return formats;
};

/** A value with thousands separated (1,234): how the bars' titles and the tables show counts. */
export const formatCount = (value: number): string => numberFormats().whole.format(value);

/**
 * Stacked bars, one per month, one colour per series, as inline SVG: no script, no style sheet needed. The svg is
 * `role="img"` named by its <title>; every bar segment carries a <title> ("acme-prod, 2026-10: 1,234 traces"), which
 * a browser shows on hover and a screen reader reads, and the legend names the colours.
 */
export function stackedBarChart(data: BarChartData, id: string): SafeHtml {
  const { months, series } = data;
  if (months.length === 0 || series.length === 0) return html`<p class="empty">No ${data.unit} reported yet.</p>`;
  const totals = months.map((_, m) => series.reduce((sum, s) => sum + (s.values[m] ?? 0), 0));
  const top = niceCeiling(Math.max(...totals));
  const plotWidth = WIDTH - LEFT - RIGHT;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const slot = plotWidth / months.length;
  const barWidth = Math.max(2, Math.min(56, slot * 0.6));
  const y = (value: number) => TOP + plotHeight - (value / top) * plotHeight;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * top);
  const grid = ticks.map(
    (t) => html`<line class="grid" x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}" stroke="#ddd"/>
<text x="${LEFT - 6}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end" font-size="11" fill="#444">${numberFormats().compact.format(t)}</text>`,
  );
  const bars = months.map((month, m) => {
    const x = LEFT + m * slot + (slot - barWidth) / 2;
    let base = 0;
    const segments = series.map((s, i) => {
      const value = s.values[m] ?? 0;
      if (value <= 0) return html``;
      const from = base;
      base += value;
      return html`<rect class="bar" data-series="${s.name}" data-month="${month}" x="${x.toFixed(1)}" y="${y(base).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${(y(from) - y(base)).toFixed(1)}" fill="${PALETTE[i % PALETTE.length]}"><title>${s.name}, ${month}: ${formatCount(value)} ${data.unit}</title></rect>`;
    });
    const label = html`<text x="${(x + barWidth / 2).toFixed(1)}" y="${HEIGHT - BOTTOM + 16}" text-anchor="middle" font-size="11" fill="#444">${month}</text>`;
    return html`<g>${segments}${label}</g>`;
  });
  const legend = series.map(
    (s, i) =>
      html`<li><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="${PALETTE[i % PALETTE.length]}"/></svg> ${s.name}</li>`,
  );
  return html`<figure class="chart">
<svg id="${id}" role="img" aria-labelledby="${id}-title" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="100%" preserveAspectRatio="xMinYMin meet" xmlns="http://www.w3.org/2000/svg">
<title id="${id}-title">${data.title}</title>
${grid}
<line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${y(0)}" y2="${y(0)}" stroke="#888"/>
${bars}
</svg>
<ul class="legend">${legend}</ul>
</figure>`;
}

/**
 * Report rows (one per month, license and organization) as the chart's months and one series per license. Past
 * `maxSeries` licenses (one colour each), the largest `maxSeries - 1` keep theirs and the rest are one series.
 */
export function tracesByLicense(
  rows: readonly { month: string; license_id: string; traces: number }[],
  lastMonths = 12,
  maxSeries = PALETTE.length,
): { months: string[]; series: ChartSeries[] } {
  const months = [...new Set(rows.map((r) => r.month))].sort().slice(-lastMonths);
  const index = new Map(months.map((m, i) => [m, i]));
  const byLicense = new Map<string, number[]>();
  for (const row of rows) {
    const m = index.get(row.month);
    if (m === undefined) continue;
    const values = byLicense.get(row.license_id) ?? months.map(() => 0);
    values[m]! += Number(row.traces);
    byLicense.set(row.license_id, values);
  }
  const series = [...byLicense].map(([name, values]) => ({ name, values }));
  const byName = (a: ChartSeries, b: ChartSeries) => a.name.localeCompare(b.name);
  if (series.length <= maxSeries) return { months, series: series.sort(byName) };
  const total = (s: ChartSeries) => s.values.reduce((a, b) => a + b, 0);
  series.sort((a, b) => total(b) - total(a) || byName(a, b));
  const rest = series.slice(maxSeries - 1);
  const others = { name: `${rest.length} other licenses`, values: months.map((_, m) => rest.reduce((sum, s) => sum + s.values[m]!, 0)) };
  return { months, series: [...series.slice(0, maxSeries - 1).sort(byName), others] };
}
