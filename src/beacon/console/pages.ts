import type { StoredUsageSnapshot, TraceReportRow } from "../store.ts";
import { describeInstances } from "../instances.ts";
import { licenseState, type LicenseRecord } from "../licenses.ts";
import type { AdminDeps } from "../admin/deps.ts";
import { licenseForms } from "./actions.ts";
import { formatCount, stackedBarChart, tracesByLicense } from "./chart.ts";
import { html, type SafeHtml } from "./html.ts";
import { instancesTable, layout, licensesTable, problemPage, stateBadge, when } from "./layout.ts";
import type { ConsoleSession } from "./sessions.ts";

/** The newest snapshots a license page lists. */
const SNAPSHOTS_SHOWN = 50;

/** The most recently seen DEFAULT_INSTANCES_LIMIT instances (of a license), and how many there are. */
const instancesOf = (deps: AdminDeps, licenseId?: string) =>
  describeInstances(deps.store.instances, { licenseId, now: deps.now(), silentAfterMs: deps.config.admin.silentAfter });

/** Said under a table that shows only the most recently seen of more. */
const shownOf = (page: { instances: readonly unknown[]; total: number }) =>
  page.total > page.instances.length
    ? html`<p class="hint">The ${page.instances.length} most recently seen of ${page.total}; <code>GET /v1/admin/instances?limit=&amp;offset=</code> lists them all.</p>`
    : "";

/** Overview: traces per month per license, instances active and silent, licenses expiring within 30 days, all licenses. */
export async function overviewPage(deps: AdminDeps, session: ConsoleSession): Promise<SafeHtml> {
  const now = deps.now();
  // Counted in the database: the instances themselves are not loaded (there may be many).
  const activeSince = new Date(now - deps.config.admin.silentAfter);
  const [records, report, counts] = await Promise.all([
    deps.store.licenses.all(),
    deps.store.traceReport(),
    deps.store.instances.instanceCounts(activeSince),
  ]);
  const licenses = records.map((record) => ({ record, state: licenseState(record, now), instances: counts.get(record.id)?.total ?? 0 }));
  const expiring = licenses.filter((l) => l.state === "expiring").sort((a, b) => a.record.expiresAt.localeCompare(b.record.expiresAt));
  const [total, active] = [...counts.values()].reduce(([t, a], c) => [t + c.total, a + c.active], [0, 0]);
  const chart = stackedBarChart({ title: "Traces per month per license", unit: "traces", ...tracesByLicense(report) }, "traces-chart");
  const main = html`<section aria-labelledby="usage-h"><h2 id="usage-h">Traces per month</h2>${chart}</section>
<section aria-labelledby="instances-h"><h2 id="instances-h">Instances</h2>
<dl class="counts">
<div><dt>Active</dt><dd id="instances-active">${active}</dd></div>
<div><dt>Silent</dt><dd id="instances-silent">${total - active}</dd></div>
</dl>
<p class="hint">Silent: not heard from for <code>admin.silentAfter</code>. <a href="/console/instances">Every instance</a></p>
</section>
<section aria-labelledby="expiring-h" id="expiring"><h2 id="expiring-h">Expiring within 30 days</h2>
${licensesTable(expiring, "Licenses expiring within 30 days, soonest first")}</section>
<section aria-labelledby="licenses-h" id="licenses"><h2 id="licenses-h">Licenses</h2>${licensesTable(licenses, "Every license")}</section>`;
  return layout("Overview", session, main);
}

/** A license's totals by month (its organizations added up). */
function monthly(rows: readonly TraceReportRow[]): { month: string; transactions: number; traces: number }[] {
  const byMonth = new Map<string, { month: string; transactions: number; traces: number }>();
  for (const row of rows) {
    const month = byMonth.get(row.month) ?? { month: row.month, transactions: 0, traces: 0 };
    month.transactions += Number(row.transactions);
    month.traces += Number(row.traces);
    byMonth.set(row.month, month);
  }
  return [...byMonth.values()];
}

function licenseFacts(record: LicenseRecord, now: number): SafeHtml {
  return html`<dl class="facts">
<div><dt>State</dt><dd>${stateBadge(licenseState(record, now))}</dd></div>
<div><dt>Organization</dt><dd>${record.organizationId}</dd></div>
<div><dt>Expires</dt><dd>${when(record.expiresAt)}</dd></div>
<div><dt>Seats</dt><dd>${record.seats}</dd></div>
<div><dt>Offline allowed</dt><dd>${record.offlineAllowed ? "yes" : "no"}</dd></div>
<div><dt>Last verified</dt><dd>${when(record.lastVerifiedAt)}</dd></div>
${record.revokedAt ? html`<div><dt>Revoked</dt><dd>${when(record.revokedAt)}</dd></div>` : ""}
</dl>`;
}

function snapshotsTable(snapshots: readonly StoredUsageSnapshot[]): SafeHtml {
  if (snapshots.length === 0) return html`<p class="empty">No usage snapshot received.</p>`;
  const rows = snapshots.map(
    (s) => html`<tr><td>${when(s.from_timestamp)}</td><td>${when(s.to_timestamp)}</td>
<td class="num">${s.measures.workspaces}</td><td class="num">${s.measures.users}</td><td class="num">${s.measures.projects}</td>
<td class="num">${s.measures.experiments}</td><td class="num">${s.measures.datasets}</td><td class="num">${s.measures.prompts}</td>
<td class="num">${s.measures.active_pats_30d}</td></tr>`,
  );
  return html`<table>
<caption>Usage snapshots, newest first (at most ${SNAPSHOTS_SHOWN})</caption>
<thead><tr><th scope="col">From</th><th scope="col">To</th><th scope="col">Workspaces</th><th scope="col">Users</th><th scope="col">Projects</th><th scope="col">Experiments</th><th scope="col">Datasets</th><th scope="col">Prompts</th><th scope="col">Active PATs (30 d)</th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
}

/** One license: its facts, usage by month (a chart and a table), its instances and its usage snapshots. */
export async function licensePage(deps: AdminDeps, session: ConsoleSession, id: string): Promise<{ status: number; page: SafeHtml }> {
  const record = await deps.store.licenses.get(id);
  if (!record) return { status: 404, page: problemPage("No such license", `There is no license with id ${id}.`, session) };
  const [report, instances, snapshots] = await Promise.all([
    deps.store.traceReport({ licenseId: id }),
    instancesOf(deps, id),
    deps.store.usageSnapshots({ licenseId: id, newest: SNAPSHOTS_SHOWN }),
  ]);
  const usage = monthly(report).slice(-12);
  const chart = stackedBarChart(
    {
      title: `Traces per month of ${id}`,
      unit: "traces",
      months: usage.map((u) => u.month),
      series: [{ name: id, values: usage.map((u) => u.traces) }],
    },
    "usage-chart",
  );
  const usageRows = usage.map(
    (u) =>
      html`<tr><td>${u.month}</td><td class="num">${formatCount(u.transactions)}</td><td class="num">${formatCount(u.traces)}</td></tr>`,
  );
  const own = snapshots;
  const main = html`${licenseFacts(record, deps.now())}
<section aria-labelledby="usage-h"><h2 id="usage-h">Usage by month</h2>${chart}
${usage.length > 0 ? html`<table><caption>Trace transactions and traces by month (last 12)</caption><thead><tr><th scope="col">Month</th><th scope="col">Transactions</th><th scope="col">Traces</th></tr></thead><tbody>${usageRows}</tbody></table>` : ""}
</section>
<section aria-labelledby="instances-h" id="instances"><h2 id="instances-h">Instances</h2>${instancesTable(instances.instances, `Instances of ${id}`, false)}${shownOf(instances)}</section>
<section aria-labelledby="snapshots-h" id="snapshots"><h2 id="snapshots-h">Usage snapshots</h2>${snapshotsTable(own)}</section>
${licenseForms(record, session, deps.now())}`;
  return { status: 200, page: layout(`License ${id}`, session, main) };
}

export async function instancesPage(deps: AdminDeps, session: ConsoleSession): Promise<SafeHtml> {
  const page = await instancesOf(deps);
  const main = html`<p>${page.active} active, ${page.total - page.active} silent (not heard from for <code>admin.silentAfter</code>).</p>
${instancesTable(page.instances, "Every instance, most recently seen first", true)}${shownOf(page)}`;
  return layout("Instances", session, main);
}
