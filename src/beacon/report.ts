import type { TraceReportRow } from "./store.ts";

/**
 * The vendor's billing view: per month and license, the organizations that license's instance reported (each
 * a line), a license total when there are several, and a grand total.
 */
export function formatTraceReport(rows: readonly TraceReportRow[]): string {
  if (rows.length === 0) return "no trace transactions ingested\n";
  const header = ["MONTH", "LICENSE", "ORGANIZATION", "TRANSACTIONS", "TRACES"];
  const body: string[][] = [];
  for (const [i, row] of rows.entries()) {
    body.push([row.month, row.license_id, row.organization_id, String(row.transactions), String(row.traces)]);
    const next = rows[i + 1];
    if (next?.month === row.month && next.license_id === row.license_id) continue;
    const group = rows.filter((r) => r.month === row.month && r.license_id === row.license_id);
    if (group.length > 1)
      body.push([row.month, row.license_id, "(license total)", String(sumBy(group, "transactions")), String(sumBy(group, "traces"))]);
  }
  const total = ["total", "", "", String(sumBy(rows, "transactions")), String(sumBy(rows, "traces"))];
  const table = [header, ...body, total];
  const widths = header.map((_, col) => Math.max(...table.map((row) => row[col]!.length)));
  return table
    .map((row) =>
      row
        .map((cell, col) => (col >= 3 ? cell.padStart(widths[col]!) : cell.padEnd(widths[col]!)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n")
    .concat("\n");
}

function sumBy(rows: readonly TraceReportRow[], key: "transactions" | "traces"): number {
  return rows.reduce((total, row) => total + row[key], 0);
}
