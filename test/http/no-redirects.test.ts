import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

// Deny by default: fetch follows redirects unless told not to, and on a redirect to another host it re-sends custom
// headers (an API key) and a 307/308's body (a deployment's secrets). Every fetch of the product says `redirect:`.
const SRC = new URL("../../src/", import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

/** The text of each `fetch(...)` call in `code`, up to its closing parenthesis. */
function fetchCalls(code: string): string[] {
  const calls: string[] = [];
  for (let at = code.indexOf("fetch("); at >= 0; at = code.indexOf("fetch(", at + 1)) {
    if (/[\w.]/.test(code[at - 1] ?? "")) continue; // someone else's fetch-something
    let depth = 0;
    let end = at + "fetch".length;
    for (; end < code.length; end++) {
      if (code[end] === "(") depth++;
      else if (code[end] === ")" && --depth === 0) break;
    }
    calls.push(code.slice(at, end + 1));
  }
  return calls;
}

test("every fetch in src/ says what a redirect does (`redirect:`), so none follows one to another host", () => {
  const calls = sources(SRC).flatMap((file) => fetchCalls(readFileSync(file, "utf8")).map((call) => ({ file, call })));
  assert.ok(calls.length >= 6, `found the product's fetch calls (${calls.length})`);
  const following = calls.filter(({ call }) => !/redirect:\s*"(manual|error)"/.test(call)).map(({ file, call }) => `${file}: ${call}`);
  assert.deepEqual(following, []);
});
