import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import fc from "fast-check";
import { BeaconConfig } from "../../src/beacon/config.ts";
import { hashLicenseKey } from "../../src/beacon/licenses.ts";
import { openBeaconStorage, type BeaconStorage } from "../../src/beacon/storage.ts";
import { ConfigError } from "../../src/errors.ts";
import { ORG_ID, OTHER_ORG_ID, testLicense } from "../helpers/fixtures.ts";
import { freshDatabase } from "../helpers/postgres.ts";
import { tempDir } from "../helpers/processes.ts";

// The licenses and the admin audit log, one suite for both engines (as storage.test.ts): a vendor's licenses must
// behave alike on SQLite and on PostgreSQL.

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const engines = [
  { name: "sqlite", config: async () => BeaconConfig.parse({ dataDir: tempDir("beacon-licenses-") }) },
  {
    name: "postgresql",
    config: async () => {
      const database = await freshDatabase("egress_licenses");
      cleanups.push(database.drop);
      return BeaconConfig.parse({ dataDir: tempDir(), database: { url: database.url } });
    },
  },
];

const NOW = new Date("2026-11-24T12:00:00Z");
const later = (ms: number) => new Date(NOW.getTime() + ms);
const fresh = (id: string, key = `key-of-${id}`) => ({
  id,
  organizationId: ORG_ID,
  expiresAt: "2027-06-30T00:00:00.000Z",
  seats: 10,
  offlineAllowed: false,
  keySha256: hashLicenseKey(key),
  revokedAt: null,
  keyRotatedAt: null,
});

for (const engine of engines) {
  describe(`licenses on ${engine.name}`, () => {
    async function opened(): Promise<{ store: BeaconStorage; reopen(): Promise<BeaconStorage> }> {
      const config = await engine.config();
      const store = await openBeaconStorage(config);
      cleanups.push(() => store.close());
      return {
        store,
        reopen: async () => {
          const other = await openBeaconStorage(config);
          cleanups.push(() => other.close());
          return other;
        },
      };
    }

    test("create, a taken id refused with nothing changed, renew, revoke and rotate: each moves the version and is audited", async () => {
      const { store } = await opened();
      const licenses = store.licenses;
      const v0 = await licenses.version();
      assert.equal(await licenses.create(fresh("acme"), "key:aaaaaaaa", NOW), true);
      assert.equal(await licenses.create({ ...fresh("acme", "other"), seats: 99 }, "key:aaaaaaaa", NOW), false, "a taken id");
      const created = await licenses.get("acme");
      assert.equal(created?.seats, 10, "the refused create changed nothing");
      assert.equal(created?.keySha256, hashLicenseKey("key-of-acme"));
      const v1 = await licenses.version();
      assert.ok(v1 > v0);

      assert.equal(await licenses.update("acme", { seats: 20 }, "key:bbbbbbbb", later(1000)), true);
      assert.equal(await licenses.update("nope", { seats: 20 }, "key:bbbbbbbb", later(1000)), false);
      const renewed = await licenses.get("acme");
      assert.deepEqual([renewed?.seats, renewed?.expiresAt], [20, "2027-06-30T00:00:00.000Z"], "only the given field changes");

      assert.equal(await licenses.rotateKey("acme", hashLicenseKey("new-key"), "key:bbbbbbbb", later(2000)), true);
      assert.equal((await licenses.get("acme"))?.keyRotatedAt, later(2000).toISOString());
      assert.equal(await licenses.revoke("acme", "key:bbbbbbbb", later(3000)), true);
      assert.equal(await licenses.revoke("acme", "key:bbbbbbbb", later(4000)), true, "again: still revoked");
      assert.equal((await licenses.get("acme"))?.revokedAt, later(3000).toISOString(), "the first revocation's time stays");
      assert.ok((await licenses.version()) > v1);

      const log = await licenses.auditLog({ limit: 100 });
      assert.deepEqual(
        log.map((r) => [r.actor, r.action, r.licenseId]),
        [
          ["key:bbbbbbbb", "license.revoke", "acme"],
          ["key:bbbbbbbb", "license.revoke", "acme"],
          ["key:bbbbbbbb", "license.rotate-key", "acme"],
          ["key:bbbbbbbb", "license.update", "acme"],
          ["key:aaaaaaaa", "license.create", "acme"],
        ],
        "newest first; the refused create and the update of an unknown id left no record",
      );
      assert.deepEqual(log[3]?.detail, { seats: 20 });
      assert.ok(!JSON.stringify(log).includes(hashLicenseKey("new-key")), "no key, not even its hash, in the audit log");
      assert.equal((await licenses.auditLog({ limit: 2 })).length, 2);
      assert.equal((await licenses.auditLog({ licenseId: "other", limit: 100 })).length, 0);
    });

    test("beacon.yaml's licenses: applied when new or changed in the file; an unchanged entry leaves the API's changes alone", async () => {
      const { store, reopen } = await opened();
      const entry = { ...testLicense({ id: "globex" }), offlineAllowed: true };
      await store.licenses.applyConfig([entry], NOW);
      const applied = await store.licenses.get("globex");
      assert.deepEqual([applied?.keySha256, applied?.seats, applied?.offlineAllowed], [hashLicenseKey(entry.key), 50, true]);

      await store.licenses.update("globex", { seats: 70 }, "key:aaaaaaaa", later(1000));
      await store.licenses.rotateKey("globex", hashLicenseKey("rotated"), "key:aaaaaaaa", later(1000));
      const version = await store.licenses.version();
      // A restart (another replica, the same one) with the file unchanged.
      const replica = await reopen();
      await replica.licenses.applyConfig([entry], later(2000));
      const kept = await replica.licenses.get("globex");
      assert.deepEqual([kept?.seats, kept?.keySha256], [70, hashLicenseKey("rotated")], "the API's renewal and rotation stay");
      assert.equal(await replica.licenses.version(), version, "nothing changed");

      // The file's seats changed: only they are applied; the key replaced through the API stays (bringing the old
      // one back would let a leaked key in again).
      await replica.licenses.applyConfig([{ ...entry, seats: 80 }], later(3000));
      const reseated = await replica.licenses.get("globex");
      assert.deepEqual([reseated?.seats, reseated?.keySha256], [80, hashLicenseKey("rotated")]);
      assert.equal(reseated?.keyRotatedAt, later(1000).toISOString());

      // The file's key changed: it is applied, a key change, so rotated now.
      await replica.licenses.applyConfig([{ ...entry, seats: 80, key: "a-new-key-from-the-file-0000" }], later(4000));
      const changed = await replica.licenses.get("globex");
      assert.deepEqual([changed?.seats, changed?.keySha256], [80, hashLicenseKey("a-new-key-from-the-file-0000")]);
      assert.equal(changed?.keyRotatedAt, later(4000).toISOString());
      assert.deepEqual((await replica.licenses.auditLog({ licenseId: "globex", limit: 10 })).map((r) => [r.actor, r.action]).at(0), [
        "config",
        "license.config",
      ]);
    });

    test("replicas starting together on a fresh database both apply the file's licenses, each once", async () => {
      const { store, reopen } = await opened();
      const replica = await reopen();
      const entries = ["acme", "globex", "initech"].map((id) => ({ ...testLicense({ id }), offlineAllowed: false }));
      await Promise.all([store.licenses.applyConfig(entries, NOW), replica.licenses.applyConfig(entries, later(1))]);
      for (const entry of entries) {
        assert.equal((await replica.licenses.get(entry.id))?.keySha256, hashLicenseKey(entry.key));
        const records = await store.licenses.auditLog({ licenseId: entry.id, limit: 10 });
        assert.deepEqual(
          records.map((r) => r.action),
          ["license.config"],
          `${entry.id}: written once`,
        );
      }
    });

    test("a config key another license has in the database is refused at start, naming the entry", async () => {
      const { store } = await opened();
      await store.licenses.create(fresh("taken", "shared-key-0000"), "key:aaaaaaaa", NOW);
      const entry = { ...testLicense({ id: "newcomer", key: "shared-key-0000", organizationId: OTHER_ORG_ID }), offlineAllowed: true };
      await assert.rejects(
        store.licenses.applyConfig([entry], NOW),
        (err: unknown) => err instanceof ConfigError && /licenses\[0\]\.key: the same key as license taken/.test(err.problems[0]!),
      );
      assert.equal(await store.licenses.get("newcomer"), undefined);
    });

    test("last verified: the latest time wins, and it is no change to the version", async () => {
      const { store } = await opened();
      await store.licenses.create(fresh("acme"), "key:aaaaaaaa", NOW);
      const version = await store.licenses.version();
      await store.licenses.recordVerified(new Map([["acme", later(5000)]]));
      await store.licenses.recordVerified(new Map([["acme", later(1000)]]));
      assert.equal((await store.licenses.get("acme"))?.lastVerifiedAt, later(5000).toISOString());
      assert.equal(await store.licenses.version(), version);
    });
  });
}

// Random sequences of admin operations and restarts with a config, against a few-line model: what the store keeps
// (and its version moving on every change, never on a refused one) is what the model says, on both engines.
for (const engine of engines) {
  test(`licenses on ${engine.name}: random operations agree with a model`, async () => {
    const config = await engine.config();
    const store = await openBeaconStorage(config);
    cleanups.push(() => store.close());
    type Model = { seats: number; expiresAt: string; key: string; revoked: boolean };
    const ids = ["a", "b", "c"];
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            op: fc.constantFrom("create", "update", "revoke", "rotate", "config"),
            id: fc.constantFrom(...ids),
            seats: fc.integer({ min: 0, max: 100 }),
            day: fc.integer({ min: 1, max: 28 }),
          }),
          { maxLength: 25 },
        ),
        async (ops) => {
          // Each run on fresh tables: a new id prefix keeps runs apart.
          const run = Math.random().toString(36).slice(2, 8);
          const model = new Map<string, Model>();
          // id -> the config entry last applied
          let applied = new Map<string, { key: string; expiresAt: string; seats: number }>();
          let at = NOW.getTime();
          for (const { op, id: short, seats, day } of ops) {
            const id = `${run}-${short}`;
            at += 1000;
            const now = new Date(at);
            const expiresAt = `2027-01-${String(day).padStart(2, "0")}T00:00:00.000Z`;
            const before = await store.licenses.version();
            let changed = false;
            const known = model.get(id);
            if (op === "create") {
              const key = `${id}-key-${at}`;
              changed = await store.licenses.create({ ...fresh(id, key), seats, expiresAt }, "key:model", now);
              assert.equal(changed, !known);
              if (!known) model.set(id, { seats, expiresAt, key: hashLicenseKey(key), revoked: false });
            } else if (op === "update") {
              changed = await store.licenses.update(id, { seats }, "key:model", now);
              assert.equal(changed, Boolean(known));
              if (known) known.seats = seats;
            } else if (op === "revoke") {
              changed = await store.licenses.revoke(id, "key:model", now);
              assert.equal(changed, Boolean(known));
              if (known) known.revoked = true;
            } else if (op === "rotate") {
              const key = hashLicenseKey(`${id}-rotated-${at}`);
              changed = await store.licenses.rotateKey(id, key, "key:model", now);
              assert.equal(changed, Boolean(known));
              if (known) known.key = key;
            } else {
              const entry = { id, key: `${id}-config-key-${seats}`, organizationId: ORG_ID, expiresAt, seats, offlineAllowed: true };
              await store.licenses.applyConfig([entry], now);
              // Only what the file changed since it last wrote the license is written: the API's changes stay.
              const last = applied.get(id);
              const fileChanged = (field: "seats" | "expiresAt" | "key") => last === undefined || last[field] !== entry[field];
              changed = !known || last === undefined || (["seats", "expiresAt", "key"] as const).some(fileChanged);
              applied = new Map(applied).set(id, entry);
              if (!known) model.set(id, { seats, expiresAt, key: hashLicenseKey(entry.key), revoked: false });
              else if (changed) {
                if (fileChanged("seats")) known.seats = seats;
                if (fileChanged("expiresAt")) known.expiresAt = expiresAt;
                if (fileChanged("key")) known.key = hashLicenseKey(entry.key);
              }
            }
            const after = await store.licenses.version();
            assert.equal(after > before, changed, `${op} ${id}: the version moves exactly when something changed`);
          }
          for (const short of ids) {
            const id = `${run}-${short}`;
            const stored = await store.licenses.get(id);
            const expected = model.get(id);
            assert.deepEqual(
              stored && { seats: stored.seats, expiresAt: stored.expiresAt, key: stored.keySha256, revoked: stored.revokedAt !== null },
              expected,
            );
          }
        },
      ),
      { numRuns: engine.name === "sqlite" ? 60 : 15 },
    );
  });
}
