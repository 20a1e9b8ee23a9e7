import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { FIELDS, leaves } from "../helpers/otlp-fields.ts";
import { CORPUS } from "../helpers/private-values.ts";

// Realistic private values in every free-text field that leaves, in the encodings they arrive in: none may reach the
// filter's output (what the beacon stores), while the telemetry itself still does.

test("the corpus: no private value, in any field or encoding, leaves; the item itself still does", () => {
  const leaks: string[] = [];
  for (const [field, plant] of Object.entries(FIELDS)) {
    for (const [name, { value, secrets }] of Object.entries(CORPUS)) {
      const { texts, kept } = leaves(plant(value));
      assert.equal(kept, 1, `${name} in ${field}: the item still leaves`);
      for (const secret of secrets) {
        if (texts.toLowerCase().includes(secret.toLowerCase()))
          leaks.push(`${name} in ${field}: "${secret}" left in ${texts.slice(0, 300)}`);
      }
    }
  }
  assert.deepEqual(leaks, []);
});

test("ordinary values keep their words; their numbers leave as <num>", () => {
  const ordinary: [string, string][] = [
    ["platform_http_requests_latency", "platform_http_requests_latency"],
    ["seconds", "seconds"],
    ["request latency", "request latency"],
    ["counter of failed requests", "counter of failed requests"],
    ["POST /runs", "POST /runs"],
    ["GET /threads/{thread_id}/runs", "GET /threads/{thread_id}/runs"],
    ["pool exhausted after 30 s", "pool exhausted after <num> s"],
    ["backend", "backend"],
    ["ERROR", "ERROR"],
    ["HTTP 503 from upstream", "HTTP <num> from upstream"],
    ["retry 3 of 5", "retry <num> of <num>"],
  ];
  for (const [value, expected] of ordinary) {
    const { json } = leaves(FIELDS["metric description"]!(value));
    assert.ok(json.includes(`"description":${JSON.stringify(expected)}`), `${value} leaves as ${expected}: ${json.slice(0, 400)}`);
  }
});

test("property: private values planted at random places in valid requests never leave; the telemetry does", () => {
  const values = Object.values(CORPUS);
  const fields = Object.values(FIELDS);
  const filler = fc.stringMatching(/^[a-z ]{0,12}$/);
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: values.length - 1 }),
      fc.integer({ min: 0, max: fields.length - 1 }),
      filler,
      filler,
      (v, f, before, after) => {
        const { value, secrets } = values[v]!;
        const { texts, kept } = leaves(fields[f]!(`${before}${before ? " " : ""}${value}${after ? " " : ""}${after}`));
        assert.equal(kept, 1);
        for (const secret of secrets)
          assert.ok(!texts.toLowerCase().includes(secret.toLowerCase()), `${secret} left: ${texts.slice(0, 300)}`);
      },
    ),
    { numRuns: 2000, seed: 20261124 },
  );
});
