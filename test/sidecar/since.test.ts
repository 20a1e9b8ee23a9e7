import assert from "node:assert/strict";
import { test } from "node:test";
import { parseSince } from "../../src/sidecar/commands/since.ts";
import type { ConfigError } from "../../src/errors.ts";

test("--since takes a date (midnight UTC) or any RFC 3339 timestamp with an offset, and refuses what intake refuses", () => {
  assert.equal(parseSince("2026-11-01"), Date.UTC(2026, 10, 1));
  assert.equal(parseSince("2026-11-01T02:00:00+02:00"), Date.UTC(2026, 10, 1));
  assert.equal(parseSince("2026-10-31 19:00:00.5-05:00"), Date.UTC(2026, 10, 1, 0, 0, 0, 500));
  const cases: [string, RegExp][] = [
    ["2026-11-01T10:00:00", /no UTC offset/], // Date.parse reads it in the machine's zone
    ["2026-02-30", /has days 01-28/], // Date.parse rolls it over to March 2
    ["2026-02-30T00:00:00Z", /has days 01-28/],
    ["Nov 1 2026", /RFC 3339/],
  ];
  for (const [text, problem] of cases) {
    assert.throws(
      () => parseSince(text),
      (err: ConfigError) => err.problems.length === 1 && err.problems[0]!.startsWith("--since: ") && problem.test(err.problems[0]!),
      text,
    );
  }
});
