import assert from "node:assert/strict";
import { after, test } from "node:test";
import Database from "better-sqlite3";
import fc from "fast-check";
import { Outbox } from "../../src/sidecar/storage/outbox.ts";
import { recordKey, type StoredKey, storedId, storedKeyColumns } from "../../src/sidecar/storage/record-key.ts";
import { tempDir } from "../helpers/processes.ts";

const SEED = process.env.FC_SEED ?? "20261128";
const options = (numRuns: number): fc.Parameters<unknown> => ({ numRuns, ...(SEED === "random" ? {} : { seed: Number(SEED) }) });

/** Ids near a canonical UUID: its case changed, one character swapped, a dash moved or dropped, or text that is not one. */
const ids = fc.oneof(
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
  fc
    .tuple(fc.uuid(), fc.nat(35), fc.constantFrom("g", "-", "A", "0", "é", "\u0000"))
    .map(([u, i, c]) => u.slice(0, i) + c + u.slice(i + 1)),
  fc.uuid().map((u) => u.replaceAll("-", "")),
  fc.uuid().map((u) => `${u.slice(0, 8)}${u.slice(9, 10)}-${u.slice(10)}`),
  fc.string({ maxLength: 40 }),
);

const db = new Database(":memory:");
after(() => db.close());
const keyColumns = db.prepare(`SELECT ${storedKeyColumns("k")} FROM (SELECT ? AS k)`);
/** A key through SQLite and back to its id, as the outbox reads it. */
const readBack = (key: string | Buffer | null) => storedId(keyColumns.get(key) as StoredKey);
const same = (a: string | Buffer | null, b: string | Buffer | null) =>
  typeof a === "string" || typeof b === "string" || a === null || b === null ? a === b : a.equals(b);

test("record keys: a canonical UUID is its 16 bytes, anything else its text; each reads back (through SQLite) as the id it was", () => {
  assert.deepEqual(recordKey("2d3c4b5a-6978-4abc-8def-0123456789ab"), Buffer.from("2d3c4b5a69784abc8def0123456789ab", "hex"));
  for (const text of ["2D3C4B5A-6978-4ABC-8DEF-0123456789AB", "2d3c4b5a-6978-4abc-8def-0123456789a", "2026-11-01T10:00:00.000Z", ""])
    assert.equal(recordKey(text), text);
  assert.equal(recordKey(undefined), null);
  assert.equal(readBack(null), null);
  fc.assert(
    fc.property(ids, (id) => {
      const key = recordKey(id);
      assert.equal(Buffer.isBuffer(key), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id), id);
      assert.equal(readBack(key), id);
    }),
    options(3000),
  );
});

test("record keys: two ids are one key only when they are one text (an id is never taken for another's duplicate)", () => {
  fc.assert(
    fc.property(ids, ids, (a, b) => assert.equal(same(recordKey(a), recordKey(b)), a === b, `${a} / ${b}`)),
    options(3000),
  );
  const uuid = "b8e5a573-541f-487e-beeb-022d8413530f";
  for (const near of [uuid.toUpperCase(), uuid.replaceAll("-", ""), `${uuid.slice(0, 35)}e`])
    assert.equal(same(recordKey(uuid), recordKey(near)), false);
});

test("record keys: the outbox gives back every id as it was enqueued, when claimed, exported, and dead-lettered", () => {
  const outbox = new Outbox(tempDir());
  const [sample] = fc.sample(fc.uniqueArray(ids, { minLength: 300, maxLength: 300 }), {
    numRuns: 1,
    seed: Number(SEED === "random" ? Date.now() : SEED),
  }) as string[][];
  assert.ok(sample);
  assert.equal(
    outbox.enqueue(
      "billing",
      sample.map((recordId) => ({ recordId, body: "{}" })),
    ),
    sample.length,
  );
  assert.equal(
    outbox.enqueue(
      "billing",
      sample.map((recordId) => ({ recordId, body: "{}" })),
    ),
    0,
    "each held once",
  );
  const claimed = outbox.claim("billing", sample.length);
  assert.deepEqual(
    claimed.map((r) => r.recordId),
    sample,
  );
  assert.deepEqual(
    [...outbox.history.records("billing")].map((r) => r.recordId),
    sample,
  );
  outbox.deadLetter(
    "billing",
    claimed.map((r) => r.seq),
    "refused",
  );
  assert.deepEqual(
    outbox.stats.deadLetters("billing", sample.length).map((d) => d.recordId),
    sample,
  );
  outbox.close();
});
