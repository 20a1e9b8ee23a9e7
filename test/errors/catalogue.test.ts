import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { ERRORS_DOC, errorCodesDoc } from "../../scripts/error-codes-table.ts";
import { ERRORS } from "../../src/error-codes.ts";

// The catalogue is where a user looks a code up: docs/errors.md's table, the codes in src/ and the catalogue must agree.

const SRC = new URL("../../src/", import.meta.url).pathname;
const CATALOGUE_FILE = "error-codes.ts";
/** Anything shaped like one of our codes, under any prefix: `BEACON_ERR_X`, a bare `ERR_X`, a typo'd `EGRESS_ERR_X`. */
const CODE_LIKE = /\b(?:[A-Z][A-Z0-9]*_)?ERR_[A-Z0-9_]+\b/g;
const known = new Set(Object.keys(ERRORS));

/** Each code-looking word of src/ outside the catalogue, with where it is. */
function codesInSources(): { code: string; at: string }[] {
  const found: { code: string; at: string }[] = [];
  for (const file of readdirSync(SRC, { recursive: true, encoding: "utf8" })) {
    if (!file.endsWith(".ts") || file === CATALOGUE_FILE) continue;
    readFileSync(join(SRC, file), "utf8")
      .split("\n")
      .forEach((line, i) => {
        for (const [code] of line.matchAll(CODE_LIKE)) found.push({ code, at: `src/${file}:${i + 1}` });
      });
  }
  return found;
}

test("docs/errors.md's Error codes table lists every code of the catalogue, and no other", () => {
  const doc = readFileSync(ERRORS_DOC, "utf8");
  const listed = [...doc.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]!);
  assert.deepEqual(
    { missing: [...known].filter((code) => !listed.includes(code)), notInCatalogue: listed.filter((code) => !known.has(code)) },
    { missing: [], notInCatalogue: [] },
    "run `node scripts/error-codes-table.ts`",
  );
  assert.equal(doc, errorCodesDoc(), "the table's status, meaning or fix is stale: run `node scripts/error-codes-table.ts`");
});

test("every error code in src/ is in the catalogue", () => {
  const unknown = codesInSources().filter(({ code }) => !known.has(code));
  assert.deepEqual(
    unknown,
    [],
    "add these to src/error-codes.ts (our codes start with EGRESS_ERR_), or name a library's code by its export",
  );
});

test("every code in the catalogue is still emitted somewhere in src/", () => {
  const used = new Set(codesInSources().map(({ code }) => code));
  assert.deepEqual(
    [...known].filter((code) => !used.has(code)),
    [],
    "a code no longer emitted: remove its entry",
  );
});

test("the README and docs/ name only codes the catalogue has (a renamed or removed code is not left in prose)", () => {
  const root = new URL("../../", import.meta.url).pathname;
  const docs = ["README.md", ...readdirSync(join(root, "docs")).map((file) => join("docs", file))];
  const stale = docs.flatMap((file) =>
    [...readFileSync(join(root, file), "utf8").matchAll(/\b(?:BEACON_)?EGRESS_ERR_[A-Z0-9_]+\b|\bBEACON_ERR_[A-Z0-9_]+\b/g)]
      .map(([code]) => ({ code, file }))
      .filter(({ code }) => !known.has(code)),
  );
  assert.deepEqual(stale, []);
});

/**
 * Error classes of src/ that extend Error itself, not the catalogue's EgressError, and why each never reaches a user
 * as it is: each is caught where it is thrown and turned into a catalogued error, an answer of its protocol, or a retry.
 */
const UNCATALOGUED_CLASSES: Record<string, string> = {
  EgressError: "the catalogue's base",
  RpcError: "an A2A JSON-RPC error: its code is the protocol's (-32001 task not found, ...)",
  OtlpRequestShapeError: "caught by the OTLP routes and answered as OTLP's INVALID_ARGUMENT",
  RetryableDeliveryError: "inside the shipper's retry loop",
  LicenseRefused: "inside the license check: ends its retries",
  LicenseAnswerFailed: "inside the license check: retried, its message kept for `status`",
  ContextBusyError: "turned into the A2A -32004 error",
  LeaseLostError: "a fenced run's checkpoint write: the run is aborted",
  BatchUnchanged: "inside a statement batch of the license store: rolls it back, returned as false",
};

test("src/ throws no uncatalogued error: no `throw new Error(`, and a new error class extends EgressError", () => {
  const found: { at: string; what: string }[] = [];
  for (const file of readdirSync(SRC, { recursive: true, encoding: "utf8" })) {
    if (!file.endsWith(".ts")) continue;
    readFileSync(join(SRC, file), "utf8")
      .split("\n")
      .forEach((line, i) => {
        const at = `src/${file}:${i + 1}`;
        if (/\bthrow new Error\(/.test(line)) found.push({ at, what: "throw new Error(" });
        for (const [, name] of line.matchAll(/\bclass (\w+) extends (?:Error|TypeError|RangeError)\b/g)) {
          if (!(name! in UNCATALOGUED_CLASSES)) found.push({ at, what: `class ${name} extends Error` });
        }
      });
  }
  assert.deepEqual(
    found,
    [],
    "throw a catalogued error (EgressError with a code of src/error-codes.ts, or a subclass; InternalError for a bug), " +
      "or list an internal signal that never reaches a user in UNCATALOGUED_CLASSES with why",
  );
});
