import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { normalise } from "../../src/sidecar/privacy/normalise.ts";
import { FIELDS, leaves } from "../helpers/otlp-fields.ts";
import { CLASSES, DISGUISES } from "../helpers/private-classes.ts";

// As an attacker would test it: private values of every class (e-mail, names, phones, cards, national ids, IP
// addresses in every notation, provider keys and tokens, JWTs, basic-auth URLs, key=value secrets, PEM blocks,
// cookies, home directories, street addresses, dates of birth), each under a random disguise (case, separators,
// percent-encoding once or twice, HTML entities, fullwidth forms, homoglyphs, zero-width and bidi characters), in a
// random field of a valid request, with random English around it. Neither the secret parts, nor the value, nor
// their disguised or normalised forms may appear in any text that leaves; the item itself still leaves.
// Seeded: a failure prints its seed and path, and `fc.assert(..., { seed, path })` replays it.

const FILLER = ["", "user", "request failed for", "login by", "sent to", "the value is", "Error:", "retry after"];
const fields = Object.entries(FIELDS);
const disguises = Object.entries(DISGUISES);

/** The forms of `text` that must not appear: itself, disguised, and both normalised (when long enough to mean anything). */
function forms(text: string, disguise: (text: string, seed: number) => string, seed: number): string[] {
  const disguised = disguise(text, seed);
  return [...new Set([text, disguised, normalise(text), normalise(disguised)])].filter((form) => form.trim().length >= 3);
}

for (const [kind, generator] of Object.entries(CLASSES)) {
  test(`property: ${kind} never leaves, in any field, under any disguise`, () => {
    fc.assert(
      fc.property(
        generator,
        fc.integer({ min: 0, max: disguises.length - 1 }),
        fc.integer({ min: 0, max: fields.length - 1 }),
        fc.constantFrom(...FILLER),
        fc.constantFrom(...FILLER),
        fc.nat(1000),
        (planted, d, f, before, after, seed) => {
          const [disguiseName, disguise] = disguises[d]!;
          const [fieldName, plant] = fields[f]!;
          const text = [before, disguise(planted.value, seed), after].filter((part) => part !== "").join(" ");
          const { texts, kept } = leaves(plant(text));
          assert.equal(kept, 1, "the item itself leaves");
          const left = texts.toLowerCase();
          for (const secret of [planted.value, ...planted.secrets]) {
            for (const form of forms(secret, disguise, seed)) {
              assert.ok(
                !left.includes(form.toLowerCase()),
                `${kind} ${JSON.stringify(planted.value)} as ${disguiseName} in ${fieldName}: ${JSON.stringify(form)} left in ${JSON.stringify(texts.slice(0, 400))}`,
              );
            }
          }
        },
      ),
      { numRuns: 600, seed: 2026_11_26 },
    );
  });
}
