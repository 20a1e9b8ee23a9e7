import assert from "node:assert/strict";
import { describe, test } from "node:test";
import Database from "better-sqlite3";
import type { AdminDeps } from "../../src/beacon/admin/deps.ts";
import { BeaconConfig } from "../../src/beacon/config.ts";
import { overviewPage } from "../../src/beacon/console/pages.ts";
import { INSTANCES_SQLITE_SCHEMA, SqliteInstances } from "../../src/beacon/instances.ts";
import { niceCeiling, PALETTE, stackedBarChart, tracesByLicense } from "../../src/beacon/console/chart.ts";
import { consolePath, escapeHtml, html } from "../../src/beacon/console/html.ts";
import { instancesTable, licensesTable } from "../../src/beacon/console/layout.ts";
import { ConsoleSessions, csrfTokenMatches, SignInLimiter } from "../../src/beacon/console/sessions.ts";
import { ApiKeys, hashApiKey } from "../../src/http/api-keys.ts";
import type { HttpRequest } from "../../src/http/exchange.ts";

const SCRIPT = "<script>alert(1)</script>";

/** The rects of a chart: their series, month, height and the title each carries. */
function bars(svg: string) {
  return [
    ...svg.matchAll(
      /<rect class="bar" data-series="([^"]*)" data-month="([^"]*)" x="[^"]*" y="([^"]*)" width="[^"]*" height="([^"]*)" fill="([^"]*)"><title>([^<]*)<\/title>/g,
    ),
  ].map(([, series, month, y, height, fill, title]) => ({ series, month, y: Number(y), height: Number(height), fill, title }));
}

describe("the console's escaping", () => {
  test("every value put into html`` is escaped; markup made by html`` is kept", () => {
    assert.equal(escapeHtml(`<a href="x" title='y'>&</a>`), "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
    const cell = html`<td>${SCRIPT}</td>`;
    assert.equal(cell.text, "<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>");
    assert.equal(html`<tr>${cell}${[cell, null, undefined, false]}</tr>`.text, `<tr>${cell.text}${cell.text}</tr>`);
    // A value breaking out of a quoted attribute stays inside it.
    assert.equal(html`<a title="${'" onmouseover="alert(1)'}">`.text, '<a title="&quot; onmouseover=&quot;alert(1)">');
  });

  test("ids go into links encoded, so they cannot change the path", () => {
    assert.equal(consolePath("licenses", "../../v1/admin"), "/console/licenses/..%2F..%2Fv1%2Fadmin");
    assert.equal(consolePath("licenses", SCRIPT), "/console/licenses/%3Cscript%3Ealert(1)%3C%2Fscript%3E");
  });

  test("the tables show a hostile license id, organization and version as text", () => {
    const record = {
      id: SCRIPT,
      organizationId: "<b>org</b>",
      expiresAt: "2027-01-01T00:00:00.000Z",
      seats: 3,
      offlineAllowed: false,
      keySha256: "x",
      revokedAt: null,
      keyRotatedAt: null,
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
      lastVerifiedAt: null,
    };
    const licenses = licensesTable([{ record, state: "active", instances: 1 }], "caption").text;
    assert.ok(!licenses.includes("<script>") && !licenses.includes("<b>"), licenses);
    assert.ok(licenses.includes("&lt;script&gt;alert(1)&lt;/script&gt;</a>"));
    const instance = { instanceId: "i", licenseId: SCRIPT, version: "<img src=x onerror=alert(1)>", mode: "online" as const };
    const rows = instancesTable(
      [{ ...instance, firstSeenAt: "2026-01-01T00:00:00Z", lastSeenAt: "2026-01-01T00:00:00Z", state: "silent" }],
      "c",
      true,
    ).text;
    assert.ok(!rows.includes("<img") && !rows.includes("<script>"), rows);
  });
});

describe("the console's chart", () => {
  test("the y axis ends on a round number at or above the tallest bar", () => {
    assert.deepEqual([0, 1, 3, 7, 10, 11, 240, 999, 1001].map(niceCeiling), [1, 1, 5, 10, 10, 20, 500, 1000, 2000]);
  });

  test("report rows become one series per license over the last months, organizations added up", () => {
    const rows = [
      { month: "2026-09", license_id: "b", traces: 5 },
      { month: "2026-10", license_id: "a", traces: 1 },
      { month: "2026-10", license_id: "a", traces: 2 }, // another organization of the same license
      { month: "2026-11", license_id: "b", traces: 4 },
      { month: "2025-01", license_id: "c", traces: 9 }, // older than the months shown
    ];
    assert.deepEqual(tracesByLicense(rows, 3), {
      months: ["2026-09", "2026-10", "2026-11"],
      series: [
        { name: "a", values: [0, 3, 0] },
        { name: "b", values: [5, 0, 4] },
      ],
    });
  });

  test("past one colour per license, the largest keep theirs and the rest are one series", () => {
    const rows = ["a", "b", "c", "d"].flatMap((id, i) => [
      { month: "2026-10", license_id: id, traces: (i + 1) * 10 },
      { month: "2026-11", license_id: id, traces: 1 },
    ]);
    assert.deepEqual(tracesByLicense(rows, 12, 3), {
      months: ["2026-10", "2026-11"],
      series: [
        { name: "c", values: [30, 1] },
        { name: "d", values: [40, 1] },
        { name: "2 other licenses", values: [30, 2] },
      ],
    });
    assert.equal(tracesByLicense(rows, 12, 4).series.length, 4, "four fit in four colours");
  });

  test("bars stack per month, their heights in proportion, each titled with its license, month and count", () => {
    const svg = stackedBarChart(
      {
        title: "Traces",
        unit: "traces",
        months: ["2026-10", "2026-11"],
        series: [
          { name: "a", values: [100, 1500] },
          { name: "b", values: [300, 0] },
        ],
      },
      "c",
    ).text;
    assert.match(svg, /<svg id="c" role="img" aria-labelledby="c-title"/);
    assert.match(svg, /<title id="c-title">Traces<\/title>/);
    const drawn = bars(svg);
    // No bar for a zero: b has none in 2026-11.
    assert.deepEqual(
      drawn.map((b) => [b.series, b.month, b.title, b.fill]),
      [
        ["a", "2026-10", "a, 2026-10: 100 traces", PALETTE[0]],
        ["b", "2026-10", "b, 2026-10: 300 traces", PALETTE[1]],
        ["a", "2026-11", "a, 2026-11: 1,500 traces", PALETTE[0]],
      ],
    );
    const [a10, b10, a11] = drawn;
    assert.ok(Math.abs(b10!.height / a10!.height - 3) < 0.05, "300 is drawn three times as tall as 100");
    assert.ok(Math.abs(a11!.height / (a10!.height + b10!.height) - 1500 / 400) < 0.05);
    assert.ok(Math.abs(b10!.y + b10!.height - a10!.y) < 0.11, "b sits on top of a");
    // The axis: 0 to 2k (1,500 rounded up), and a legend naming both.
    assert.match(svg, />2K<\/text>/);
    assert.match(svg, /<ul class="legend">.* a<\/li>.* b<\/li><\/ul>/s);
  });

  test("a hostile series name is text in the bar's title, attribute and legend; no data says so", () => {
    const svg = stackedBarChart({ title: SCRIPT, unit: "traces", months: ["2026-11"], series: [{ name: SCRIPT, values: [5] }] }, "x").text;
    assert.ok(!svg.includes("<script>"), svg);
    assert.equal(bars(svg)[0]!.series, "&lt;script&gt;alert(1)&lt;/script&gt;");
    assert.equal(
      stackedBarChart({ title: "t", unit: "traces", months: [], series: [] }, "x").text,
      '<p class="empty">No traces reported yet.</p>',
    );
  });
});

describe("console sessions", () => {
  test("a session lives while used, ends after 8 h idle or 24 h in all, and on sign-out", () => {
    let now = 0;
    const sessions = new ConsoleSessions({ now: () => now });
    const { id, session } = sessions.open("key:abcd0123");
    assert.match(id, /^[A-Za-z0-9_-]{43}$/, "256 random bits");
    assert.equal(sessions.find(id), session);
    assert.equal(sessions.find(`${id}x`), undefined);
    now += 7 * 3_600_000;
    assert.ok(sessions.find(id), "7 h idle is fine");
    now += 8 * 3_600_000;
    assert.equal(sessions.find(id), undefined, "8 h idle ends it");
    const second = sessions.open("key:abcd0123");
    for (let h = 0; h < 24; h += 4) {
      now += 4 * 3_600_000;
      if (h < 20) assert.ok(sessions.find(second.id), `still in at ${h + 4} h`);
    }
    assert.equal(sessions.find(second.id), undefined, "24 h after signing in, however busy");
    const third = sessions.open("key:abcd0123");
    sessions.close(third.id);
    assert.equal(sessions.find(third.id), undefined);
  });

  test("sessions are bounded: the least recently used goes first", () => {
    const sessions = new ConsoleSessions({ limits: { idleMs: 1e9, absoluteMs: 1e9, maxSessions: 3 } });
    const ids = [1, 2, 3].map(() => sessions.open("a").id);
    assert.ok(sessions.find(ids[0]));
    sessions.open("a");
    assert.equal(sessions.size, 3);
    assert.equal(sessions.find(ids[1]), undefined, "the least recently used is gone");
    assert.ok(sessions.find(ids[0]) && sessions.find(ids[2]));
  });

  test("a form's CSRF token must be the session's", () => {
    const { session } = new ConsoleSessions().open("a");
    assert.ok(csrfTokenMatches(session, session.csrfToken));
    for (const token of [
      undefined,
      "",
      session.csrfToken.slice(1),
      `${session.csrfToken}x`,
      new ConsoleSessions().open("a").session.csrfToken,
    ])
      assert.equal(csrfTokenMatches(session, token), false);
  });

  test("failed sign-ins: 10 a minute per address, 100 in all, and no more than 1024 addresses remembered", () => {
    let now = 0;
    const limiter = new SignInLimiter({ now: () => now });
    for (let i = 0; i < 10; i++) {
      assert.equal(limiter.retryAfterMs("10.0.0.1"), 0);
      limiter.failed("10.0.0.1");
    }
    assert.equal(limiter.retryAfterMs("10.0.0.1"), 60_000);
    assert.equal(limiter.retryAfterMs("10.0.0.2"), 0, "another address may still try");
    now += 30_000;
    assert.equal(limiter.retryAfterMs("10.0.0.1"), 30_000);
    now += 30_000;
    assert.equal(limiter.retryAfterMs("10.0.0.1"), 0, "a new window");
    for (let i = 0; i < 2000; i++) limiter.failed(`10.1.${i >> 8}.${i & 255}`);
    assert.equal(limiter.tracked, 1024);
    assert.ok(limiter.retryAfterMs("10.9.9.9") > 0, "many addresses together are held back too");
  });
});

test("a key typed into the sign-in form is checked as X-Api-Key is, and names the same actor", () => {
  const keys = new ApiKeys([hashApiKey("a-key-of-24-characters!!"), "another-key-16-chars"]);
  const viaHeader = keys.identify({ headers: { "x-api-key": "another-key-16-chars" } } as unknown as HttpRequest);
  assert.equal(keys.identifyKey("another-key-16-chars"), viaHeader);
  assert.match(keys.identifyKey("a-key-of-24-characters!!"), /^key:[0-9a-f]{8}$/);
  for (const bad of ["", "another-key-16-chars ", "sha256:", hashApiKey("a-key-of-24-characters!!")])
    assert.throws(() => keys.identifyKey(bad), { statusCode: 401, code: "EGRESS_ERR_API_KEY_INVALID" });
});

describe("the console's overview", () => {
  test("counts instances in the database: it loads none of them, however many there are", async () => {
    const now = new Date("2026-11-24T12:00:00.000Z");
    const db = new Database(":memory:");
    db.exec(INSTANCES_SQLITE_SCHEMA);
    const table = new SqliteInstances(db);
    const seen = (licenseId: string, n: number, hoursAgo: number) =>
      table.recordInstance({
        licenseId,
        instanceId: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
        version: "0.1.0",
        mode: "online",
        seenAt: new Date(now.getTime() - hoursAgo * 3_600_000),
      });
    await seen("acme", 1, 1);
    await seen("acme", 2, 30); // silent after the default 26 h
    await seen("globex", 3, 2);
    const instances = {
      recordInstance: () => Promise.reject(new Error("not here")),
      instanceCounts: (since: Date) => table.instanceCounts(since),
      instances: () => Promise.reject(new Error("the overview loaded every instance")),
    };
    const record = {
      id: "acme",
      organizationId: "org",
      expiresAt: "2027-01-01T00:00:00.000Z",
      seats: 3,
      offlineAllowed: false,
      keySha256: "x",
      revokedAt: null,
      keyRotatedAt: null,
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
      lastVerifiedAt: null,
    };
    const store = { instances, licenses: { all: async () => [record] }, traceReport: async () => [] };
    const deps = { config: BeaconConfig.parse({}), store, now: () => now.getTime() } as unknown as AdminDeps;
    const page = (await overviewPage(deps, { actor: "key:0", csrfToken: "t", createdAtMs: 0, lastSeenAtMs: 0 })).text;
    assert.match(page, /<dd id="instances-active">2<\/dd>/);
    assert.match(page, /<dd id="instances-silent">1<\/dd>/);
    assert.ok(page.includes(licensesTable([{ record, state: "active", instances: 2 }], "Every license").text), "acme's 2 instances");
  });
});
