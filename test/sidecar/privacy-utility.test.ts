import assert from "node:assert/strict";
import { test } from "node:test";
import { scrubText } from "../../src/sidecar/privacy/scrub.ts";
import { asSent, HELD_OUT_TEXT, PLATFORM_TEXT } from "../helpers/platform-text.ts";
import { utilityFigure } from "../helpers/utility.ts";

// What the filter keeps of realistic platform text: the share of the constant words of log lines, span names and
// metric descriptions that leave (their parameters go; that is the point). Floor 95%: a line of ten words keeps its
// meaning with one word in twenty lost; below that a whole class of words is missing from the vocabulary (a size of
// the word list, the product's words, the capital-letter rule gone wrong), not a word here and there.
const FLOOR = 0.95;

for (const [name, entries] of [
  ["platform text", PLATFORM_TEXT],
  ["held-out platform text (never used to tune the vocabulary)", HELD_OUT_TEXT],
] as const) {
  test(`utility on ${name}: the share of constant words kept is above ${FLOOR * 100}%`, () => {
    const { kept, total, losses } = utilityFigure(entries);
    console.log(`utility on ${name}: ${kept} of ${total} constant words kept (${((kept / total) * 100).toFixed(1)}%)`);
    for (const { out, lost } of losses) console.log(`  lost ${lost.join(", ")} in ${JSON.stringify(out)}`);
    assert.ok(kept / total >= FLOOR, `${kept} of ${total}`);
  });
}

test("the parameters of the platform text do not leave with its constants", () => {
  const out = scrubText(asSent("Permission denied for user [[Maria Garcia]] from [[203.0.113.7]] ([[alice.smith@corp.example]])"));
  assert.equal(out, "Permission denied for user <text> <text> from <ip> (<email>)");
});
