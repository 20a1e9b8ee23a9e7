import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { OTHER_ORG_ID, ORG_ID, testLicense, traceTransactions } from "../helpers/fixtures.ts";
import { beaconConfig, postJson, runCli, startBeacon, tempDir } from "../helpers/processes.ts";

describe("egress-agent beacon: configuration", () => {
  test("an invalid config exits 2 with one line per problem, each naming the key", async () => {
    const dir = tempDir();
    const path = join(dir, "beacon.yaml");
    writeFileSync(
      path,
      [
        "listen: localhost",
        "tokenTtl: forever",
        "colour: blue",
        "licenses:",
        "  - key: lic-valid-key-000000",
        "    id: acme",
        "    organizationId: not-a-uuid",
        "    expiresAt: 2027-12-31T00:00:00Z",
        "    seats: 5",
      ].join("\n"),
    );
    const { code, stderr } = await runCli(["beacon", "--config", path]);
    assert.equal(code, 2);
    assert.match(stderr, /^\s+listen: must be HOST:PORT/m);
    assert.match(stderr, /^\s+tokenTtl: must be a positive duration/m);
    assert.match(stderr, /^\s+colour: unknown key/m);
    assert.match(stderr, /^\s+licenses\[0\]\.organizationId: must be a UUID/m);
  });

  test("a missing config file or broken YAML exits 2 naming the file", async () => {
    const missing = await runCli(["beacon", "--config", "/nonexistent/beacon.yaml"]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /\/nonexistent\/beacon\.yaml.*\n.*cannot read the file: ENOENT/);
    const dir = tempDir();
    writeFileSync(join(dir, "bad.yaml"), "licenses: [\n");
    const broken = await runCli(["beacon", "--config", join(dir, "bad.yaml")]);
    assert.equal(broken.code, 2);
    assert.match(broken.stderr, /not valid YAML/);
  });

  test("duplicate license ids are refused, and a license needs exactly one of key or keySha256", async () => {
    const license = testLicense();
    const fixture = beaconConfig([
      license,
      { ...testLicense(), id: license.id },
      { ...testLicense({ id: "nokey" }), key: undefined as unknown as string },
    ]);
    const { code, stderr } = await runCli(["beacon", "--config", fixture.configPath]);
    assert.equal(code, 2);
    assert.match(stderr, /licenses\[1\]\.id: duplicate license id "acme-prod"/);
    assert.match(stderr, /licenses\[2\]\.key: give exactly one of key or keySha256/);
  });

  test("one key for two licenses is refused, given as key or as keySha256, naming both entries and changing nothing", async () => {
    const { createHash } = await import("node:crypto");
    const prod = testLicense();
    const hashed = {
      ...testLicense({ id: "acme-staging" }),
      key: undefined,
      keySha256: createHash("sha256").update(prod.key).digest("hex"),
    };
    // A copy-pasted block with a new id, and the same key again as its hash.
    const fixture = beaconConfig([prod, testLicense({ id: "other" }), { ...prod, id: "globex-prod" }, hashed as never]);
    const { code, stderr } = await runCli(["beacon", "--config", fixture.configPath]);
    assert.equal(code, 2);
    assert.match(stderr, /licenses\[2\]\.key: the same key as licenses\[0\]\.key \(acme-prod\)/);
    assert.match(stderr, /licenses\[3\]\.keySha256: the same key as licenses\[0\]\.key \(acme-prod\)/);
    assert.doesNotMatch(stderr, /licenses\[1\]/, "a license with a key of its own is not named");
    assert.doesNotMatch(stderr, new RegExp(prod.key), "the key itself is never printed");
    assert.equal(existsSync(fixture.dataDir), false, "the beacon created nothing");
  });

  test("a license given by keySha256 is accepted with the key it hashes, so the key need not sit in the file", async () => {
    const { createHash } = await import("node:crypto");
    const key = "lic-hashed-key-123456789";
    const keySha256 = createHash("sha256").update(key).digest("hex");
    const fixture = beaconConfig([
      { id: "hashed", organizationId: ORG_ID, expiresAt: "2099-01-01T00:00:00Z", seats: 1, keySha256 } as never,
    ]);
    const beacon = await startBeacon(fixture);
    try {
      const response = await postJson(`${beacon.url}/v1/beacon/verify`, { license: key });
      assert.equal(response.status, 200);
    } finally {
      await beacon.stop();
    }
  });

  test("--listen beats the config file's listen", async () => {
    const fixture = beaconConfig([testLicense()], { listen: "127.0.0.1:1" });
    const { startService } = await import("../helpers/processes.ts");
    const beacon = await startService(["beacon", "--config", fixture.configPath, "--listen", "127.0.0.1:0"], "beacon listening");
    try {
      assert.notEqual(new URL(beacon.url).port, "1");
      assert.equal((await fetch(`${beacon.url}/healthz`)).status, 200);
    } finally {
      await beacon.stop();
    }
  });
});

describe("egress-agent beacon report", () => {
  test("prints trace counts per month and license, by organization within it, filtered by --license, --org and --month", async () => {
    const license = testLicense();
    const other = testLicense({ id: "globex", organizationId: OTHER_ORG_ID });
    const fixture = beaconConfig([license, other]);
    const beacon = await startBeacon(fixture);
    try {
      const shared = traceTransactions(1, { trace_count: 100 });
      const batches: [typeof license, ReturnType<typeof traceTransactions>][] = [
        [
          license,
          traceTransactions(3, { trace_count: 10, start_interval_time: "2026-10-31T23:59:00Z", end_interval_time: "2026-11-01T00:04:00Z" }),
        ],
        [license, traceTransactions(2, { trace_count: 5 })],
        [license, traceTransactions(4, { trace_count: 1, organization_id: OTHER_ORG_ID })],
        [other, shared],
        // The same id from another license is that license's own record, counted for it.
        [license, shared.map((t) => ({ ...t, trace_count: 1 }))],
      ];
      for (const [sender, batch] of batches) {
        const response = await postJson(`${beacon.url}/v1/beacon/ingest-traces`, { license: sender.key, trace_transactions: batch });
        assert.equal(response.status, 200);
        assert.deepEqual(response.body, { inserted_count: batch.length });
      }
    } finally {
      await beacon.stop();
    }
    const all = await runCli(["beacon", "report", "--config", fixture.configPath]);
    assert.equal(all.code, 0, all.stderr);
    const lines = all.stdout
      .trim()
      .split("\n")
      .map((l) => l.split(/\s{2,}/));
    assert.deepEqual(lines[0], ["MONTH", "LICENSE", "ORGANIZATION", "TRANSACTIONS", "TRACES"]);
    assert.deepEqual(lines.slice(1), [
      ["2026-10", "acme-prod", ORG_ID, "3", "30"],
      ["2026-11", "acme-prod", OTHER_ORG_ID, "4", "4"],
      ["2026-11", "acme-prod", ORG_ID, "3", "11"],
      ["2026-11", "acme-prod", "(license total)", "7", "15"],
      ["2026-11", "globex", ORG_ID, "1", "100"],
      ["total", "11", "145"],
    ]);

    const filtered = await runCli([
      "beacon",
      "report",
      "--config",
      fixture.configPath,
      "--org",
      ORG_ID,
      "--month",
      "2026-11",
      "--license",
      "acme-prod",
      "--json",
    ]);
    assert.deepEqual(JSON.parse(filtered.stdout), [
      { month: "2026-11", license_id: "acme-prod", organization_id: ORG_ID, transactions: 3, traces: 11 },
    ]);

    const none = await runCli(["beacon", "report", "--config", fixture.configPath, "--month", "2025-01"]);
    assert.equal(none.stdout, "no trace transactions ingested\n");

    const badMonth = await runCli(["beacon", "report", "--config", fixture.configPath, "--month", "2026-13"]);
    assert.equal(badMonth.code, 2);
    assert.match(badMonth.stderr, /--month: must be YYYY-MM/);
  });

  test("a data dir the beacon never wrote is a clear runtime error, exit 1", async () => {
    const fixture = beaconConfig([testLicense()]);
    const { code, stderr } = await runCli(["beacon", "report", "--config", fixture.configPath]);
    assert.equal(code, 1);
    assert.match(stderr, /beacon\.db/);
  });
});
