import assert from "node:assert/strict";
import { PassThrough, Readable } from "node:stream";
import { test } from "node:test";
import { bodyLines, type LineLimits } from "../../src/beacon/admin/import-lines.ts";
import type { HttpError } from "../../src/errors.ts";

const limits: LineLimits = { maxBytes: 1 << 20, maxLineBytes: 16, idleMs: 1000 };

async function linesOf(chunks: (string | Buffer)[], over: Partial<LineLimits> = {}) {
  const out: (string | "TOO LONG")[] = [];
  for await (const line of bodyLines(Readable.from(chunks.map((c) => Buffer.from(c))), { ...limits, ...over })) {
    assert.equal(line.number, out.length + 1, "numbered from 1, one by one");
    out.push(line.tooLong ? "TOO LONG" : line.text);
  }
  return out;
}

test("lines are cut at \\n wherever the chunks break, \\r\\n too, and a last line without \\n is a line", async () => {
  assert.deepEqual(await linesOf(["ab", "c\nd", "e\r\n\nf"]), ["abc", "de", "", "f"]);
  assert.deepEqual(await linesOf(["a\n"]), ["a"]);
  assert.deepEqual(await linesOf([]), []);
  // A character cut between chunks is whole in its line.
  const euro = Buffer.from("€\n");
  assert.deepEqual(await linesOf([euro.subarray(0, 1), euro.subarray(1)]), ["€"]);
});

test("a line past maxLineBytes is reported by its number and skipped to its end, never held", async () => {
  const long = "x".repeat(40);
  assert.deepEqual(await linesOf(["ok\n", long.slice(0, 10), long.slice(10), "\nnext\n"]), ["ok", "TOO LONG", "next"]);
  assert.deepEqual(await linesOf(["ok\n", long]), ["ok", "TOO LONG"]);
});

test("a body past maxBytes is refused with 413", async () => {
  await assert.rejects(linesOf(["0123456789\n", "0123456789\n"], { maxBytes: 15 }), (err: HttpError) => err.statusCode === 413);
});

test("a body that stalls is refused with 408; one that breaks off with 400", async () => {
  const stalled = new PassThrough();
  stalled.write("a\n");
  const read = (async () => {
    for await (const _ of bodyLines(stalled, { ...limits, idleMs: 50 })) {
      // the first line arrives; then nothing
    }
  })();
  await assert.rejects(read, (err: HttpError) => err.statusCode === 408);
  const broken = new PassThrough();
  broken.write("a\n");
  setTimeout(() => broken.destroy(new Error("aborted")), 10);
  await assert.rejects(
    (async () => {
      for await (const _ of bodyLines(broken, limits)) {
        // until it breaks
      }
    })(),
    (err: HttpError) => err.statusCode === 400,
  );
});
