import * as z from "zod";
import { HttpError } from "../../errors.ts";
import type { HttpRequest } from "../../http/exchange.ts";
import type { HttpServer } from "../../http/server.ts";
import { LicensePatch } from "../../protocol/beacon-admin.ts";
import type { AdminDeps } from "../admin/deps.ts";
import { renewLicense, revokeLicense } from "../admin/license-routes.ts";
import { licenseState, type LicenseRecord } from "../licenses.ts";
import { cookieValue, redirect, SESSION_COOKIE } from "./answers.ts";
import { consolePath, html, type SafeHtml } from "./html.ts";
import { type ConsoleSession, type ConsoleSessions, csrfTokenMatches } from "./sessions.ts";
import { formOf, sessionForm } from "./sign-in.ts";

/** The renew and revoke forms of a license page; none once it is revoked (revocation is final). */
export function licenseForms(record: LicenseRecord, session: ConsoleSession, now: number): SafeHtml {
  if (licenseState(record, now) === "revoked") return html``;
  const csrf = html`<input type="hidden" name="csrf" value="${session.csrfToken}">`;
  return html`<section aria-labelledby="actions-h" id="actions"><h2 id="actions-h">Renew or revoke</h2>
<form method="post" action="${consolePath("licenses", record.id, "renew")}" class="action">${csrf}
<label>New expiry (UTC) <input type="date" name="expiresAt" value="${record.expiresAt.slice(0, 10)}" required></label>
<label>Seats <input type="number" name="seats" min="0" value="${record.seats}" required></label>
<button type="submit">Renew</button>
</form>
<form method="post" action="${consolePath("licenses", record.id, "revoke")}" class="action">${csrf}
<label><input type="checkbox" name="confirm" value="yes" required> Its key and its tokens are refused from now on; this cannot be undone</label>
<button type="submit" class="danger">Revoke</button>
</form>
</section>`;
}

/** The renew form's fields as the API's PATCH body: a date means midnight UTC, as the label says. */
const RenewForm = z.object({
  expiresAt: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be a date (YYYY-MM-DD)" }),
  seats: z.string().regex(/^\d+$/, { message: "must be a whole number" }),
});

function renewal(form: URLSearchParams): LicensePatch {
  const fields = RenewForm.safeParse({ expiresAt: form.get("expiresAt") ?? "", seats: form.get("seats") ?? "" });
  const patch = fields.success
    ? LicensePatch.safeParse({ expiresAt: `${fields.data.expiresAt}T00:00:00Z`, seats: Number(fields.data.seats) })
    : fields;
  if (!patch.success) {
    const problems = patch.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ");
    throw new HttpError("EGRESS_ERR_CONSOLE_FORM_INVALID", `the renewal was not made: ${problems}`);
  }
  return patch.data;
}

/**
 * POST /console/licenses/{id}/renew and .../revoke: the same functions as the admin API's PATCH and revoke, so the
 * same audit record, its actor the fingerprint of the key the session signed in with. Then back to the license page.
 */
export function registerLicenseActions(app: HttpServer, deps: AdminDeps, sessions: ConsoleSessions): void {
  const action =
    (change: (id: string, form: URLSearchParams, by: { log: HttpRequest["log"]; actor: string }) => Promise<unknown>) =>
    async (request: HttpRequest) => {
      const session = sessions.find(cookieValue(request, SESSION_COOKIE));
      if (!session) return redirect("/console/login"); // ended since authorize looked
      const form = formOf(request);
      if (!csrfTokenMatches(session, form.get("csrf") ?? undefined))
        throw new HttpError(
          "EGRESS_ERR_CONSOLE_FORM_REFUSED",
          "the form's CSRF token is missing or not this session's: reload the page and try again",
        );
      const id = request.params.id!;
      await change(id, form, { log: request.log, actor: session.actor });
      return redirect(consolePath("licenses", id));
    };
  const options = sessionForm(sessions);
  app.post(
    "/console/licenses/{id}/renew",
    action((id, form, by) => renewLicense(deps, id, renewal(form), by)),
    options,
  );
  app.post(
    "/console/licenses/{id}/revoke",
    action((id, form, by) => {
      if (form.get("confirm") !== "yes") throw new HttpError("EGRESS_ERR_CONSOLE_FORM_INVALID", "tick the box to confirm the revocation");
      return revokeLicense(deps, id, by);
    }),
    options,
  );
}
