import { request as httpRequest } from "node:http";
import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { existsSync, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Database from "better-sqlite3";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { beaconPaths } from "../../src/protocol/beacon-paths.ts";
import { ADMIN_KEY, admin, adminUrlOf } from "../helpers/beacon-admin.ts";
import { ORG_ID, OTHER_ORG_ID, traceTransactions, usageMeasures } from "../helpers/fixtures.ts";
import { beaconConfig, postJson, startBeacon, type BeaconFixture, type ServiceProcess } from "../helpers/processes.ts";

// The web console in a real browser: Debian's chromium driven by playwright-core, against a real beacon process
// (SQLite) whose licenses were made through the admin API and whose usage and instances came through the public one.
// `.ci/run` installs chromium; without it this test fails naming it (as the isolation tests do bubblewrap).

const CHROMIUM = "/usr/bin/chromium";
const SCRIPT_ID = "<script>alert(1)</script>";
const HOSTILE_VERSION = "<img src=x onerror=alert(2)>";
const DAY = 24 * 3600 * 1000;
const inDays = (days: number) => new Date(Date.now() + days * DAY).toISOString();
/** Traces per license and month: what the chart must draw. */
const USAGE: Record<string, Record<string, number>> = {
  "globex-prod": { "2026-08": 40, "2026-09": 55, "2026-10": 70, "2026-11": 90 },
  "initech-dev": { "2026-09": 10, "2026-10": 25, "2026-11": 30 },
  "umbrella-eu": { "2026-10": 35, "2026-11": 20 },
};

describe("the web console, in chromium", () => {
  let fixture: BeaconFixture;
  let beacon: ServiceProcess;
  let adminUrl: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const dialogs: string[] = [];
  const consoleErrors: string[] = [];
  const keys = new Map<string, string>();

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium; .ci/run does)`);
    fixture = beaconConfig([], { admin: { listen: "127.0.0.1:0" } });
    beacon = await startBeacon(fixture, { BEACON_ADMIN_API_KEY: ADMIN_KEY });
    adminUrl = adminUrlOf(beacon);
    const licenses = [
      { id: "globex-prod", organizationId: ORG_ID, expiresAt: inDays(400), seats: 20 },
      { id: "initech-dev", organizationId: OTHER_ORG_ID, expiresAt: inDays(12), seats: 5 },
      { id: "umbrella-eu", organizationId: OTHER_ORG_ID, expiresAt: inDays(25), seats: 8 },
    ];
    for (const body of licenses) {
      const created = await admin(adminUrl, "POST", "/v1/admin/licenses", body);
      assert.equal(created.status, 201, JSON.stringify(created.body));
      keys.set(body.id, created.body.key);
    }
    for (const [id, months] of Object.entries(USAGE)) {
      const transactions = Object.entries(months).flatMap(([month, traces]) =>
        traceTransactions(1, {
          trace_count: traces,
          start_interval_time: `${month}-05T10:00:00Z`,
          end_interval_time: `${month}-05T10:05:00Z`,
        }),
      );
      const sent = await postJson(`${beacon.url}${beaconPaths.ingestTraces}`, { license: keys.get(id), trace_transactions: transactions });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
    }
    // Instances: two of globex-prod and one of initech-dev verify, as a sidecar does.
    for (const id of ["globex-prod", "globex-prod", "initech-dev"]) {
      const headers = { "x-egress-instance-id": randomUUID(), "user-agent": "egress-agent/0.1.0 (online)" };
      assert.equal((await postJson(`${beacon.url}${beaconPaths.verify}`, { license: keys.get(id) }, headers)).status, 200);
    }
    const snapshot = { license_key: keys.get("globex-prod"), from_timestamp: "2026-11-01T00:00:00Z", to_timestamp: "2026-11-02T00:00:00Z" };
    const sent = await postJson(`${beacon.url}${beaconPaths.usageSnapshot}`, { ...snapshot, measures: usageMeasures(7) });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    // What no API lets in, written straight into the database (an old row, a hand edit): a license whose id is
    // markup, and a silent instance of it whose version is markup too.
    const db = new Database(join(fixture.dataDir, "beacon.db"));
    db.pragma("busy_timeout = 5000");
    db.prepare(
      `INSERT INTO licenses (id, organization_id, expires_at, seats, offline_allowed, key_sha256, created_at, updated_at)
       VALUES (?, ?, ?, 1, 0, 'not-a-key-hash', ?, ?)`,
    ).run(SCRIPT_ID, ORG_ID, inDays(5), inDays(-1), inDays(-1));
    db.prepare(
      "INSERT INTO instances (license_id, instance_id, version, mode, first_seen_at, last_seen_at) VALUES (?, ?, ?, 'offline', ?, ?)",
    ).run(SCRIPT_ID, randomUUID(), HOSTILE_VERSION, inDays(-9), inDays(-3));
    db.close();

    browser = await chromium.launch({ executablePath: CHROMIUM });
    context = await browser.newContext({ viewport: { width: 1180, height: 900 } });
    page = await context.newPage();
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(message.text());
    });
  });

  after(async () => {
    await browser?.close();
    if (!beacon) return; // it never started: before() says why
    assert.equal(await beacon.stop("SIGTERM"), 0);
    const output = beacon.output();
    for (const secret of [ADMIN_KEY, ...keys.values()]) assert.ok(!output.includes(secret), "no key in the beacon's logs");
  });

  test("a page asked for without a session goes to the sign-in page, which refuses a wrong key", async () => {
    await page.goto(`${adminUrl}/console`);
    assert.equal(new URL(page.url()).pathname, "/console/login");
    assert.equal(await page.title(), "Sign in - egress beacon console");
    await page.getByLabel("Admin key").fill("not-the-admin-key-0000000000");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").waitFor();
    assert.equal(await page.getByRole("alert").textContent(), "That is not an admin key of this beacon.");
    assert.equal(new URL(page.url()).pathname, "/console/login");
    assert.deepEqual(await context.cookies(), [], "no session for a wrong key");
  });

  test("signing in gives an HttpOnly, SameSite=Strict session cookie that scripts cannot read", async () => {
    await page.getByLabel("Admin key").fill(ADMIN_KEY);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${adminUrl}/console`);
    const cookies = await context.cookies();
    assert.equal(cookies.length, 1);
    const [cookie] = cookies;
    assert.deepEqual(
      { name: cookie!.name, httpOnly: cookie!.httpOnly, sameSite: cookie!.sameSite, path: cookie!.path, secure: cookie!.secure },
      { name: "egress_console", httpOnly: true, sameSite: "Strict", path: "/console", secure: false },
    );
    assert.ok(!cookie!.value.includes(ADMIN_KEY.slice(0, 8)), "the cookie is a random id, not the key");
    assert.equal(await page.evaluate("document.cookie"), "");
    assert.match((await page.locator(".who").textContent()) ?? "", /^Signed in with key:[0-9a-f]{8}$/);
  });

  test("the overview: a bar chart of traces per month per license, instances active and silent, expiring licenses", async () => {
    const chart = page.getByRole("img", { name: "Traces per month per license" });
    assert.ok(await chart.isVisible());
    const bars = await chart
      .locator("rect.bar")
      .evaluateAll((rects) =>
        rects.map((r) => ({ series: r.getAttribute("data-series"), month: r.getAttribute("data-month"), title: r.textContent })),
      );
    const expected = Object.entries(USAGE).flatMap(([id, months]) =>
      Object.entries(months).map(([month, traces]) => ({ series: id, month, title: `${id}, ${month}: ${traces} traces` })),
    );
    const order = (list: typeof bars) => [...list].sort((a, b) => `${a.month}${a.series}`.localeCompare(`${b.month}${b.series}`));
    assert.deepEqual(order(bars), order(expected));
    // Taller for more: globex-prod's 90 traces in 2026-11 against umbrella-eu's 20.
    const height = async (series: string, month: string) =>
      Number(await chart.locator(`rect.bar[data-series="${series}"][data-month="${month}"]`).getAttribute("height"));
    assert.ok(Math.abs((await height("globex-prod", "2026-11")) / (await height("umbrella-eu", "2026-11")) - 4.5) < 0.05);
    assert.deepEqual(await page.locator(".legend li").allTextContents(), [" globex-prod", " initech-dev", " umbrella-eu"]);
    assert.equal(await page.locator("#instances-active").textContent(), "3");
    assert.equal(await page.locator("#instances-silent").textContent(), "1");
    const expiring = await page.locator("#expiring tbody tr td:first-child").allTextContents();
    assert.deepEqual(expiring, [SCRIPT_ID, "initech-dev", "umbrella-eu"], "soonest first; globex-prod (400 days) is not listed");
  });

  test("a license id that is markup shows as text, and no script runs", async () => {
    const cell = page.locator("#licenses tbody tr td:first-child a", { hasText: SCRIPT_ID });
    assert.equal(await cell.textContent(), SCRIPT_ID);
    await cell.click();
    await page.waitForURL(/\/console\/licenses\//);
    assert.equal(await page.locator("h1").textContent(), `License ${SCRIPT_ID}`);
    assert.equal(await page.locator("#instances tbody td", { hasText: "<img" }).textContent(), HOSTILE_VERSION);
    assert.equal(await page.locator("script").count(), 0);
    assert.equal(await page.locator("img").count(), 0);
    // Reflected: an id typed into the address bar is in the 404 page as text.
    const answer = await page.goto(`${adminUrl}/console/licenses/${encodeURIComponent("<img src=x onerror=alert(3)>")}`);
    assert.equal(answer?.status(), 404);
    assert.equal(await page.locator(".problem").textContent(), "There is no license with id <img src=x onerror=alert(3)>.");
    assert.equal(await page.locator("main img").count(), 0);
    assert.deepEqual(dialogs, [], "no alert() ran");
  });

  test("a license page: its usage by month, its instances and its usage snapshots", async () => {
    await page.goto(`${adminUrl}/console`);
    await page.locator("#licenses a", { hasText: "globex-prod" }).click();
    await page.waitForURL(`${adminUrl}/console/licenses/globex-prod`);
    const chart = page.getByRole("img", { name: "Traces per month of globex-prod" });
    assert.deepEqual(await chart.locator("rect.bar title").allTextContents(), [
      "globex-prod, 2026-08: 40 traces",
      "globex-prod, 2026-09: 55 traces",
      "globex-prod, 2026-10: 70 traces",
      "globex-prod, 2026-11: 90 traces",
    ]);
    assert.equal(await page.locator("#instances tbody tr").count(), 2);
    assert.deepEqual(await page.locator("#instances tbody tr td:nth-child(4)").allTextContents(), ["active", "active"]);
    const snapshot = await page.locator("#snapshots tbody tr").allInnerTexts();
    assert.equal(snapshot.length, 1);
    assert.match(snapshot[0]!, /^2026-11-01 00:00\s+2026-11-02 00:00\s+7\s+7/);
  });

  test("the instances page lists every instance with its license and state", async () => {
    await page.getByRole("link", { name: "Instances" }).click();
    await page.waitForURL(`${adminUrl}/console/instances`);
    const rows = await page
      .locator("tbody tr")
      .evaluateAll((trs) =>
        trs
          .map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent))
          .map((cells) => [cells[1], cells[2], cells[3], cells[4]]),
      );
    const sorted = rows.map((r) => r.join(" | ")).sort();
    assert.deepEqual(sorted, [
      `${SCRIPT_ID} | ${HOSTILE_VERSION} | offline | silent`,
      "globex-prod | 0.1.0 | online | active",
      "globex-prod | 0.1.0 | online | active",
      "initech-dev | 0.1.0 | online | active",
    ]);
    assert.deepEqual(dialogs, []);
  });

  test("a form post without this session's CSRF token, or from another origin, is refused", async () => {
    const token = await page.locator('form[action="/console/logout"] input[name="csrf"]').getAttribute("value");
    assert.ok(token);
    const logout = `${adminUrl}/console/logout`;
    const origin = adminUrl;
    for (const [form, headers] of [
      [{}, { origin }],
      [{ csrf: "forged" }, { origin }],
      [{ csrf: token }, { origin: "http://attacker.example" }],
    ] as const) {
      const answer = await context.request.post(logout, { form, headers, maxRedirects: 0 });
      assert.equal(answer.status(), 403, JSON.stringify(form));
      assert.match(await answer.text(), /EGRESS_ERR_CONSOLE_FORM_REFUSED|another site|CSRF token/);
    }
    // A real cross-site page (localhost is another site than 127.0.0.1) whose form posts itself to the console.
    const attacker = createServer((_, response) => {
      response.setHeader("content-type", "text/html");
      response.end(`<form id="f" method="post" action="${logout}"><input name="csrf" value="guessed"></form>
<script>document.getElementById("f").submit()</script>`);
    });
    await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
    const posted = page.waitForResponse((r) => r.url() === logout);
    await page.goto(`http://localhost:${(attacker.address() as AddressInfo).port}/`);
    assert.equal((await posted).status(), 403);
    attacker.close();
    await page.goto(`${adminUrl}/console`);
    assert.equal(new URL(page.url()).pathname, "/console", "still signed in");
  });

  test("every page is served with a strict Content-Security-Policy and loads nothing it forbids", async () => {
    const answer = await context.request.get(`${adminUrl}/console/instances`, { maxRedirects: 0 });
    assert.equal(answer.status(), 200);
    const headers = answer.headers();
    assert.match(headers["content-security-policy"]!, /default-src 'none'; style-src 'self';.*form-action 'self'; frame-ancestors 'none'/);
    assert.equal(headers["x-content-type-options"], "nosniff");
    assert.equal(headers["cache-control"], "no-store");
    // The wrong key's 401, the cross-site post's 403 and the unknown license's 404 are the pages' own statuses.
    const unexpected = consoleErrors.filter(
      (e) => !/^Failed to load resource: the server responded with a status of (401|403|404)/.test(e),
    );
    assert.deepEqual(unexpected, [], "no CSP violation, no error");
    const css = await page.evaluate("getComputedStyle(document.querySelector('header')).backgroundColor");
    assert.equal(css, "rgb(29, 35, 42)", "the style sheet loaded under the CSP");
  });

  test("the screenshot for docs/console.png", {
    skip: !process.env.CONSOLE_SCREENSHOT && "set CONSOLE_SCREENSHOT=1 to write it",
  }, async () => {
    await page.goto(`${adminUrl}/console`);
    const path = new URL("../../docs/console.png", import.meta.url).pathname;
    await page.screenshot({ path, fullPage: true });
    assert.ok(statSync(path).size < 200 * 1024);
  });

  test("renewing and revoking through the license page's forms: the API's changes, audited with the session's key", async () => {
    const fingerprint = `key:${createHash("sha256").update(ADMIN_KEY).digest("hex").slice(0, 8)}`;
    const latest = async (id: string) => {
      const { action, actor } = (await admin(adminUrl, "GET", `/v1/admin/audit?license=${id}`)).body.records[0];
      return { action, actor };
    };
    await page.goto(`${adminUrl}/console/licenses/initech-dev`);
    const renewTo = inDays(400).slice(0, 10);
    await page.getByLabel("New expiry (UTC)").fill(renewTo);
    await page.getByLabel("Seats").fill("9");
    await page.getByRole("button", { name: "Renew" }).click();
    await page.waitForURL(`${adminUrl}/console/licenses/initech-dev`);
    assert.equal(await page.locator(".facts .state").textContent(), "active");
    const renewed = (await admin(adminUrl, "GET", "/v1/admin/licenses/initech-dev")).body;
    assert.deepEqual([renewed.expiresAt, renewed.seats], [`${renewTo}T00:00:00.000Z`, 9]);
    assert.deepEqual(await latest("initech-dev"), { action: "license.update", actor: fingerprint });
    // A field the form cannot take changes nothing and says which.
    const token = await page.locator('form[action$="/renew"] input[name="csrf"]').getAttribute("value");
    const bad = await context.request.post(`${adminUrl}/console/licenses/initech-dev/renew`, {
      form: { csrf: token!, expiresAt: "next year", seats: "9" },
      headers: { origin: adminUrl },
      maxRedirects: 0,
    });
    assert.equal(bad.status(), 422);
    assert.match(await bad.text(), /the renewal was not made: expiresAt: must be a date/);
    assert.equal((await admin(adminUrl, "GET", "/v1/admin/licenses/initech-dev")).body.expiresAt, `${renewTo}T00:00:00.000Z`);

    await page.goto(`${adminUrl}/console/licenses/umbrella-eu`);
    await page.getByRole("checkbox").check();
    await page.getByRole("button", { name: "Revoke" }).click();
    await page.waitForURL(`${adminUrl}/console/licenses/umbrella-eu`);
    assert.equal(await page.locator(".facts .state").textContent(), "revoked");
    assert.equal(await page.locator("#actions").count(), 0, "no forms once revoked");
    assert.equal((await postJson(`${beacon.url}${beaconPaths.verify}`, { license: keys.get("umbrella-eu") })).status, 403);
    assert.deepEqual(await latest("umbrella-eu"), { action: "license.revoke", actor: fingerprint });
  });

  test("signing out ends the session: its cookie is cleared and no longer opens a page", async () => {
    const [before] = await context.cookies();
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(`${adminUrl}/console/login`);
    assert.deepEqual(await context.cookies(), []);
    const replayed = await fetch(`${adminUrl}/console`, { headers: { cookie: `egress_console=${before!.value}` }, redirect: "manual" });
    assert.equal(replayed.status, 303);
    assert.equal(replayed.headers.get("location"), "/console/login");
    // Signing in and out are admin actions too: in the audit log with the key's fingerprint.
    const fingerprint = `key:${createHash("sha256").update(ADMIN_KEY).digest("hex").slice(0, 8)}`;
    const records = (await admin(adminUrl, "GET", "/v1/admin/audit?limit=50")).body.records as { action: string; actor: string }[];
    const signIns = records.filter((r) => r.action.startsWith("console.")).map((r) => [r.action, r.actor]);
    assert.deepEqual(signIns.slice(0, 2), [
      ["console.sign-out", fingerprint],
      ["console.sign-in", fingerprint],
    ]);
  });

  test("failed sign-ins are limited: after 10 in a minute a wrong key waits, and the right key still signs in", async () => {
    const signIn = (key: string) =>
      fetch(`${adminUrl}/console/login`, { method: "POST", body: new URLSearchParams({ key }), redirect: "manual" });
    // The first test's wrong key counts too.
    for (let i = 0; i < 9; i++) assert.equal((await signIn(`wrong-key-${i}-0000000000000`)).status, 401);
    const refused = await signIn("wrong-key-over-the-limit-000");
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get("retry-after")) > 0);
    assert.match(await refused.text(), /Too many failed sign-ins/);
    // Others' failures (one address behind a proxy is everyone's) never lock the admins out.
    const admin = await signIn(ADMIN_KEY);
    assert.equal(admin.status, 303);
    assert.match(admin.headers.get("set-cookie") ?? "", /^egress_console=/);
  });

  test("a console form without a live session is answered from its headers: to the sign-in page, its body never read", async () => {
    // Announces a large body and sends none of it: only an answer from the headers comes back at all.
    const answer = await new Promise<{ status: number; location: string | undefined }>((resolve, reject) => {
      const request = httpRequest(
        `${adminUrl}/console/licenses/globex-prod/revoke`,
        { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "content-length": "8000" } },
        (response) => {
          response.resume();
          resolve({ status: response.statusCode!, location: response.headers.location });
        },
      );
      request.on("error", reject);
      request.flushHeaders();
    });
    assert.deepEqual(answer, { status: 303, location: "/console/login" });
  });
});
