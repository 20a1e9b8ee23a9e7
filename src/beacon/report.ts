import type { TraceReportRow } from "./store.ts";

/** The vendor's billing view: one line per month, organization and license, with totals. */
export function formatTraceReport(rows: readonly TraceReportRow[]): string {
  if (rows.length === 0) return "no trace transactions ingested\n";
  const header = ["MONTH", "ORGANIZATION", "LICENSE", "TRANSACTIONS", "TRACES"];
  const body = rows.map((r) => [r.month, r.organization_id, r.license_id, String(r.transactions), String(r.traces)]);
  const total = ["total", "", "", String(sumBy(rows, "transactions")), String(sumBy(rows, "traces"))];
  const table = [header, ...body, total];
  const widths = header.map((_, col) => Math.max(...table.map((row) => row[col]!.length)));
  return table
    .map((row) => row.map((cell, col) => (col >= 3 ? cell.padStart(widths[col]!) : cell.padEnd(widths[col]!))).join("  ").trimEnd())
    .join("\n")
    .concat("\n");
}

function sumBy(rows: readonly TraceReportRow[], key: "transactions" | "traces"): number {
  return rows.reduce((total, row) => total + row[key], 0);
}
