import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { beaconPaths } from "../../src/protocol/beacon-paths.ts";
import { ExportHeader } from "../../src/protocol/instance.ts";
import { ADMIN_KEY, admin, adminUrlOf } from "../helpers/beacon-admin.ts";
import { ORG_ID, testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { offlineLicenseFiles } from "../helpers/offline-license.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import {
  agentConfig,
  beaconConfig,
  NOWHERE,
  postJson,
  runCli,
  startAgentProcess,
  startBeacon,
  tempDir,
  type ServiceProcess,
} from "../helpers/processes.ts";

// The offline true-up end to end: a real sidecar in offline mode takes transactions, `egress-agent export` writes
// the file, `egress-agent beacon import` sends it to a real beacon's admin listener (SQLite, then PostgreSQL), and
// the billing report counts each record once.

const RECORDS = 300;
const TRACES = RECORDS * 7; // the fixture's trace_count

/** An offline sidecar that took RECORDS transactions, and the file its `export` wrote. */
async function offlineExport(license: ReturnType<typeof testLicense>) {
  const fixture = agentConfig("http://127.0.0.1:4");
  const files = await offlineLicenseFiles(fixture.dir, license);
  writeFileSync(
    fixture.configPath,
    `${readFileSync(fixture.configPath, "utf8")}offline:\n  enabled: true\n  licenseFile: ${files.licenseFile}\n  publicKeyFile: ${files.publicKeyFile}\n`,
  );
  const agent = await startAgentProcess(fixture);
  const transactions = traceTransactions(RECORDS);
  try {
    const taken = await postJson(`${agent.url}/v1/transactions`, { trace_transactions: transactions });
    assert.equal(taken.status, 202);
  } finally {
    assert.equal(await agent.stop("SIGTERM"), 0);
  }
  const file = join(fixture.dir, "billing.jsonl");
  const exported = await runCli(["export", "--since", "2026-01-01", "--config", fixture.configPath, "--output", file]);
  assert.equal(exported.code, 0, exported.stderr);
  const lines = readFileSync(file, "utf8").trim().split("\n");
  assert.equal(lines.length, RECORDS + 1);
  return { file, lines, header: ExportHeader.parse(JSON.parse(lines[0]!)), transactions };
}

/** A copy of the export file with its lines changed by `edit`. */
function copyWith(file: string, edit: (lines: string[]) => string): string {
  const copy = join(tempDir(), "copy.jsonl");
  writeFileSync(copy, edit(readFileSync(file, "utf8").split("\n")));
  return copy;
}

for (const engine of ["sqlite", "postgresql"] as const) {
  describe(`offline true-up into a beacon on ${engine}`, () => {
    const license = testLicense();
    let exported: Awaited<ReturnType<typeof offlineExport>>;
    let beacon: ServiceProcess;
    let adminUrl: string;
    let configPath: string;
    let dropDatabase: (() => Promise<void>) | undefined;
    const importCli = (file: string, ...args: string[]) =>
      runCli(["beacon", "import", file, "--url", adminUrl, ...args], { env: { BEACON_ADMIN_API_KEY: ADMIN_KEY } });
    const usage = async () => (await admin(adminUrl, "GET", `/v1/admin/usage?license=${license.id}`)).body;

    before(async () => {
      exported = await offlineExport(license);
      const extra: Record<string, unknown> = { admin: { listen: "127.0.0.1:0" } };
      if (engine === "postgresql") {
        const database = await freshDatabase("egress_offline_import");
        dropDatabase = database.drop;
        extra.database = { url: database.url };
      }
      const fixture = beaconConfig([license], extra);
      configPath = fixture.configPath;
      beacon = await startBeacon(fixture, { BEACON_ADMIN_API_KEY: ADMIN_KEY });
      adminUrl = adminUrlOf(beacon);
    });
    after(async () => {
      assert.equal(await beacon.stop(), 0);
      assert.ok(!beacon.output().includes(ADMIN_KEY));
      assert.ok(!beacon.output().includes(exported.transactions[0]!.id), "no record in the beacon's log");
      await dropDatabase?.();
    });

    test("a damaged file is refused whole, naming the line and the field; nothing of it is kept", async () => {
      const badField = copyWith(exported.file, (lines) => {
        const record = JSON.parse(lines[16]!);
        lines[16] = JSON.stringify({ ...record, tenant_id: "not-a-uuid" });
        return lines.join("\n");
      });
      const refused = await importCli(badField);
      assert.equal(refused.code, 1, refused.stdout);
      assert.match(refused.stderr, /refused whole, nothing of it kept:\n {2}line 17, tenant_id: invalid_format/);
      // Cut off mid-line, as a copy that stopped short: the last line is not JSON.
      const text = readFileSync(exported.file, "utf8");
      const cut = copyWith(exported.file, () => text.slice(0, text.length - 100));
      const truncated = await importCli(cut);
      assert.equal(truncated.code, 1);
      assert.match(truncated.stderr, new RegExp(`line ${RECORDS + 1}: json_invalid`));
      // A header that is not export's.
      const headless = copyWith(exported.file, (lines) => lines.slice(1).join("\n"));
      const noHeader = await importCli(headless);
      assert.equal(noHeader.code, 1);
      assert.match(noHeader.stderr, /line 1, egress_export: missing/);
      assert.deepEqual(await usage(), [], "nothing of a refused file is kept");
    });

    test("the file imports through the CLI and shows in the billing report; the same file again imports nothing", async () => {
      const first = await importCli(exported.file);
      assert.equal(first.code, 0, first.stderr);
      assert.equal(first.stdout, `imported ${RECORDS} records, 0 duplicates (already in the beacon) for license ${license.id}\n`);
      const row = { month: "2026-11", license_id: license.id, organization_id: ORG_ID, transactions: RECORDS, traces: TRACES };
      assert.deepEqual(await usage(), [row]);
      // `beacon report` reads the database itself: the same rows as online billing's.
      const report = await runCli(["beacon", "report", "--config", configPath, "--license", license.id, "--json"], {
        env: { BEACON_ADMIN_API_KEY: ADMIN_KEY },
      });
      assert.equal(report.code, 0, report.stderr);
      assert.deepEqual(JSON.parse(report.stdout), [row]);

      const again = await importCli(exported.file, "--json");
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual(JSON.parse(again.stdout), { imported: 0, duplicates: RECORDS });
      assert.deepEqual(await usage(), [row], "counted once");

      // The instance the header names, seen offline at the time of the export.
      const { instances } = (await admin(adminUrl, "GET", `/v1/admin/instances?license=${license.id}`)).body;
      assert.deepEqual(
        instances.map((i: Record<string, unknown>) => [i.instanceId, i.mode, i.lastSeenAt]),
        [[exported.header.instance_id, "offline", exported.header.exported_at]],
      );
      // Audited with its counts, never its records.
      const { records } = (await admin(adminUrl, "GET", `/v1/admin/audit?license=${license.id}`)).body;
      const imports = records.filter((r: { action: string }) => r.action === "offline-import");
      assert.deepEqual(
        imports.map((r: { detail: Record<string, unknown> }) => [r.detail.records, r.detail.imported, r.detail.duplicates]),
        [
          [RECORDS, 0, RECORDS],
          [RECORDS, RECORDS, 0],
        ],
      );
      assert.ok(!JSON.stringify(records).includes(exported.transactions[0]!.id));
    });

    if (engine === "sqlite") {
      test("the CLI says what went wrong: the listener unreachable, the key refused, a license the beacon lacks", async () => {
        const unreachable = await runCli(["beacon", "import", exported.file, "--url", NOWHERE], {
          env: { BEACON_ADMIN_API_KEY: ADMIN_KEY },
        });
        assert.equal(unreachable.code, 1);
        assert.match(unreachable.stderr, /EGRESS_ERR_BEACON_ADMIN: cannot reach the beacon's admin listener at http:\/\/127\.0\.0\.1:4/);
        const wrongKey = await runCli(["beacon", "import", exported.file, "--url", adminUrl], {
          env: { BEACON_ADMIN_API_KEY: "wrong-key-0123456789" },
        });
        assert.equal(wrongKey.code, 1);
        assert.match(wrongKey.stderr, /401.*admin key is missing or not accepted/);
        assert.ok(!wrongKey.stderr.includes("wrong-key-0123456789"));
        const stranger = copyWith(exported.file, (lines) =>
          [JSON.stringify({ ...exported.header, license_id: "nobody" }), ...lines.slice(1)].join("\n"),
        );
        const unknown = await importCli(stranger);
        assert.equal(unknown.code, 1);
        assert.match(unknown.stderr, /404.*no such license/);
        const noKey = await runCli(["beacon", "import", exported.file, "--url", adminUrl], { env: { BEACON_ADMIN_API_KEY: "" } });
        assert.equal(noKey.code, 2);
        const missing = await importCli(join(tempDir(), "none.jsonl"));
        assert.deepEqual([missing.code, /FILE: cannot read .*none\.jsonl \(ENOENT\)/.test(missing.stderr)], [2, true]);
      });
    }

    test("records the sidecar later sends online are duplicates of the imported ones; new ones count", async () => {
      const resent = await postJson(`${beacon.url}${beaconPaths.ingestTraces}`, {
        license: license.key,
        trace_transactions: [...exported.transactions.slice(0, 50), ...traceTransactions(2)],
      });
      assert.deepEqual([resent.status, resent.body], [200, { inserted_count: 2 }]);
      assert.equal((await usage())[0].transactions, RECORDS + 2);
    });
  });
}
