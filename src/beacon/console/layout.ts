import type { InstanceView } from "../instances.ts";
import type { LicenseRecord, LicenseState } from "../licenses.ts";
import { consolePath, html, type SafeHtml } from "./html.ts";
import type { ConsoleSession } from "./sessions.ts";

/** The whole document around a page: the style sheet is a file of ours (the CSP allows no inline style or script). */
export function layout(title: string, session: ConsoleSession | undefined, main: SafeHtml): SafeHtml {
  const nav = session
    ? html`<nav aria-label="Console">
<a href="/console">Overview</a>
<a href="/console/instances">Instances</a>
<span class="who">Signed in with ${session.actor}</span>
<form method="post" action="/console/logout" class="inline"><input type="hidden" name="csrf" value="${session.csrfToken}"><button type="submit">Sign out</button></form>
</nav>`
    : html``;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} - egress beacon console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/console.css">
</head>
<body>
<header><span class="brand">egress beacon</span>${nav}</header>
<main>
<h1>${title}</h1>
${main}
</main>
</body>
</html>
`;
}

/** A license's state as a badge whose class colours it. */
export const stateBadge = (state: LicenseState | InstanceView["state"]) => html`<span class="state state-${state}">${state}</span>`;

export const licenseLink = (id: string) => html`<a href="${consolePath("licenses", id)}">${id}</a>`;

/** An ISO time as its date and minute, UTC: what a table needs; the full value is the element's title. */
export const when = (iso: string | null) =>
  iso === null
    ? html`<span class="none">never</span>`
    : html`<time datetime="${iso}" title="${iso}">${iso.slice(0, 16).replace("T", " ")}</time>`;

export function licensesTable(
  licenses: readonly { record: LicenseRecord; state: LicenseState; instances: number }[],
  caption: string,
): SafeHtml {
  if (licenses.length === 0) return html`<p class="empty">None.</p>`;
  const rows = licenses.map(
    ({ record, state, instances }) => html`<tr>
<td>${licenseLink(record.id)}</td><td>${record.organizationId}</td><td>${when(record.expiresAt)}</td><td class="num">${record.seats}</td>
<td>${stateBadge(state)}</td><td>${when(record.lastVerifiedAt)}</td><td class="num">${instances}</td>
</tr>`,
  );
  return html`<table>
<caption>${caption}</caption>
<thead><tr><th scope="col">License</th><th scope="col">Organization</th><th scope="col">Expires</th><th scope="col">Seats</th><th scope="col">State</th><th scope="col">Last verified</th><th scope="col">Instances</th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
}

export function instancesTable(instances: readonly InstanceView[], caption: string, withLicense: boolean): SafeHtml {
  if (instances.length === 0) return html`<p class="empty">No instance has reported yet.</p>`;
  const rows = instances.map(
    (i) => html`<tr>
<td><code>${i.instanceId}</code></td>${withLicense ? html`<td>${licenseLink(i.licenseId)}</td>` : ""}<td>${i.version ?? "-"}</td><td>${i.mode}</td>
<td>${stateBadge(i.state)}</td><td>${when(i.firstSeenAt)}</td><td>${when(i.lastSeenAt)}</td>
</tr>`,
  );
  return html`<table>
<caption>${caption}</caption>
<thead><tr><th scope="col">Instance</th>${withLicense ? html`<th scope="col">License</th>` : ""}<th scope="col">Version</th><th scope="col">Mode</th><th scope="col">State</th><th scope="col">First seen</th><th scope="col">Last seen</th></tr></thead>
<tbody>${rows}</tbody>
</table>`;
}

export function loginPage(problem?: string): SafeHtml {
  return layout(
    "Sign in",
    undefined,
    html`${problem ? html`<p class="problem" role="alert">${problem}</p>` : ""}
<form method="post" action="/console/login" class="login">
<label for="key">Admin key</label>
<input id="key" name="key" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
</form>
<p class="hint">An admin key of this beacon (<code>admin.apiKeys</code> or env <code>BEACON_ADMIN_API_KEY</code>).</p>`,
  );
}

export function problemPage(title: string, message: string, session: ConsoleSession | undefined): SafeHtml {
  return layout(title, session, html`<p class="problem">${message}</p><p><a href="/console">Back to the overview</a></p>`);
}
