import assert from "node:assert/strict";
import { test } from "node:test";
import { LONG_TOKEN, MAX_TOKEN_CHARS, scrubText } from "../../src/agent/privacy/scrub.ts";

/** Asserts each secret is gone from the scrubbed text and returns the text for further checks. */
function scrubbedWithout(text: string, secrets: string[]): string {
  const out = scrubText(text);
  for (const secret of secrets) assert.ok(!out.includes(secret), `${JSON.stringify(secret)} leaked in ${JSON.stringify(out)}`);
  return out;
}

test("ordinary operational messages pass unchanged", () => {
  for (const text of [
    "connection pool nearly exhausted",
    "timeout after 30s waiting for postgres (pool_size=20)",
    "retrying batch 3 of 7, max_tokens=4096, version 0.11.0",
    "worker stopped at 2026-11-01T10:00:00Z",
  ]) {
    assert.equal(scrubText(text), text);
  }
});

test("e-mail addresses become <email>", () => {
  const out = scrubbedWithout("invite sent to jane.doe+ops@example.co.uk by Bob_Smith@acme.io", [
    "jane.doe",
    "example.co.uk",
    "Bob_Smith",
    "acme.io",
  ]);
  assert.equal(out, "invite sent to <email> by <email>");
});

test("Bearer and Basic credentials lose their token", () => {
  const out = scrubbedWithout("Authorization: Bearer abc.DEF-123_x, then Basic dXNlcjpwYXNz", ["abc.DEF-123_x", "dXNlcjpwYXNz"]);
  assert.equal(out, "Authorization: Bearer <redacted>, then Basic <redacted>");
});

test("JWTs become <jwt>", () => {
  const token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqYW5lIn0.c2lnbmF0dXJl_x-1";
  assert.equal(scrubbedWithout(`rejected token ${token} (expired)`, [token, "eyJzdWIi"]), "rejected token <jwt> (expired)");
});

test("secret assignments keep the key and lose the value", () => {
  const out = scrubbedWithout(
    'api_key=k1 password: "correct horse" X-Api-Key: zz9 token=t0k secret=s3 client_secret=cs {"access_token":"at-1"} key=plain',
    ["k1", "correct horse", "zz9", "t0k", "s3", "=cs", "at-1", "plain"],
  );
  assert.match(out, /^api_key=<redacted> password: <redacted> X-Api-Key: <redacted> token=<redacted>/);
});

test("a secret after an innocent key is still found", () => {
  scrubbedWithout("config: password=hunter2, url=x token=abc", ["hunter2", "abc"]);
});

test("well-known key prefixes are redacted whole", () => {
  const keys = ["sk-ant-api03-AbC", "lsv2_pt_0123abcd", "lic-6f1c8a52-3b7e-4c55-9a51-0d2f4e6b7a10-SECRET", "ghp_xyz", "xoxb-12-34-ab"];
  const out = scrubbedWithout(`keys: ${keys.join(" ")}`, keys.concat(["6f1c8a52", "SECRET", "xyz"]));
  assert.equal(out, "keys: <redacted> <redacted> <redacted> <redacted> <redacted>");
});

test("long tokens mixing letters and digits are redacted, long plain words are not", () => {
  const sessionKey = "Zx81kQ0pLmN4vB7cR2tY9wE3";
  const traceId = "5b8efff798038103d269b633813fc60c";
  const out = scrubbedWithout(`session ${sessionKey} trace ${traceId} in internationalization_settings`, [sessionKey, traceId]);
  assert.equal(out, "session <redacted> trace <redacted> in internationalization_settings");
});

test("a bare token is a secret: mixed case and digits from 20 characters, letters and digits from 24", () => {
  // Attribute values are often a single word; the plain-word shortcut must stop where a token starts.
  assert.equal(scrubText("Zx81kQ0pLmN4vB7cR2tY9wE3"), "<redacted>");
  assert.equal(scrubText("Zx81kQ0pLmN4vB7cR2tY"), "<redacted>", "20 characters of mixed case and digits");
  assert.equal(scrubText("Zx81kQ0pLmN4vB7cR2t"), "Zx81kQ0pLmN4vB7cR2t", "19 are not enough");
  assert.equal(scrubText("5b8efff798038103d2"), "5b8efff798038103d2", "one case, under 24: kept");
  for (const word of ["POST", "backend", "200", "", "sk", "Bearer"]) assert.equal(scrubText(word), word);
  for (const [value, scrubbed] of [
    ["sk-abc", "<redacted>"],
    ["a@b.io", "<email>"],
    ["10.1.2.3", "<ip>"],
    ["Bearer abc", "Bearer <redacted>"],
  ]) {
    assert.equal(scrubText(value!), scrubbed);
  }
});

test("UUIDs become <uuid>, in either case", () => {
  const out = scrubbedWithout("tenant 6F1C8A52-3B7E-4C55-9A51-0D2F4E6B7A10 and 0b9e1d2c-7a44-4f0e-8c1b-5e6f7a8b9c0d.", [
    "6F1C8A52",
    "0b9e1d2c",
  ]);
  assert.equal(out, "tenant <uuid> and <uuid>.");
});

test("IPv4 and IPv6 addresses become <ip>; times and version numbers stay", () => {
  const out = scrubbedWithout("from 10.0.0.12:5432, fe80::1ff:fe23:4567:890a. [2001:db8::1]:443 and ::ffff:192.168.1.7 at 10:00:00", [
    "10.0.0.12",
    "fe80",
    "2001:db8",
    "192.168",
  ]);
  assert.equal(out, "from <ip>:5432, <ip>. [<ip>]:443 and <ip> at 10:00:00");
  assert.equal(scrubText("value 999.1.1.1 is not an address"), "value 999.1.1.1 is not an address");
});

test("URLs keep scheme, host and templated path but lose credentials, query and fragment", () => {
  assert.equal(scrubText("GET https://x.y/p?a=1#f failed"), "GET https://x.y/p failed");
  const out = scrubbedWithout(
    "call to https://admin:hunter2@api.acme.io:8443/threads/8d3e1f2a/runs/17?token=abc&email=jane@x.io#frag) failed.",
    ["admin", "hunter2", "8d3e1f2a", "17", "token", "abc", "jane", "frag"],
  );
  assert.equal(out, "call to https://api.acme.io:8443/threads/{thread_id}/runs/{run_id}) failed.");
  assert.equal(scrubText("see postgres://svc:pw@db:5432/app."), "see postgres://db:5432/app.");
});

test("adversarial megabyte inputs are scrubbed in one pass (no catastrophic backtracking)", () => {
  const megabyte = 1 << 20;
  const seeds = [
    "a",
    "a@",
    "a.",
    "eyJa.",
    "1.",
    "a:",
    "::",
    "key",
    'api_key:"',
    "https://",
    "x@y.",
    "Bearer ",
    "sk-",
    "a1-",
    `${"f".repeat(70)}=`,
    "select ",
    "SELECT a FROM t WHERE x='",
    "1 ",
    "1-",
    "+1 ",
    "(555) ",
    "%40",
    "a%",
    "Ab1+/",
    "Ab1=",
    "/a.",
    "ü@",
    "AKIA",
  ];
  for (const seed of seeds) {
    const text = seed.repeat(Math.ceil(megabyte / seed.length)).slice(0, megabyte);
    // A pass over a megabyte takes milliseconds; backtracking over it, minutes: the bound is far from both.
    const started = performance.now();
    scrubText(text);
    const ms = performance.now() - started;
    assert.ok(ms < 5_000, `seed ${JSON.stringify(seed)}: ${Math.round(ms)} ms for a megabyte`);
  }
  // A single megabyte-long token leaves as a placeholder, whole.
  assert.equal(scrubText("a1".repeat(megabyte / 2)), LONG_TOKEN);
});

test("a token longer than the detectors scan leaves as a placeholder; the text around it is scrubbed as usual", () => {
  const atLimit = "a1".repeat(MAX_TOKEN_CHARS / 2);
  assert.equal(scrubText(`key ${atLimit} from 203.0.113.7`), "key <redacted> from <ip>");
  for (const token of [`${atLimit}x`, `https://bob:pw@h.example/?q=${"z".repeat(MAX_TOKEN_CHARS)}`, "é".repeat(MAX_TOKEN_CHARS + 1)]) {
    assert.equal(scrubText(`mail alice@corp.example\n${token}\tthen 203.0.113.7`), `mail <email>\n${LONG_TOKEN}\tthen <ip>`);
  }
  // Blanks other than the space end a token too (a regex's \s): a long run of short words is kept.
  const words = Array.from({ length: 2000 }, (_, i) => `w${i % 10}`).join("\u00a0");
  assert.equal(scrubText(words), words);
});

test("SQL string literals of any length, blanks and escapes in them, become one ?", () => {
  const literal = "it''s \\' a ".repeat(2_000_000);
  const started = performance.now();
  const out = scrubText(`SELECT a FROM t WHERE x = '${literal}' AND y = "b c" AND z = 42`);
  console.log(`a ${(literal.length / 2 ** 20).toFixed(0)} MiB SQL literal: ${Math.round(performance.now() - started)} ms`);
  assert.equal(out, "SELECT a FROM t WHERE x = ? AND y = ? AND z = ?");
  assert.equal(scrubText("UPDATE t SET a = 'unterminated, 4711"), "UPDATE t SET a = ?");
});

test("card numbers need a card network's range and the Luhn check: ordinary long numbers stay", () => {
  for (const card of ["4111 1111 1111 1111", "5500-0000-0000-0004", "378282246310005", "6011111111111117", "2223003122003222"]) {
    assert.equal(scrubText(`paid with ${card} today`), "paid with <card> today", card);
  }
  // Luhn-valid but outside every network's range, and Luhn-invalid in range: counters and ids, not cards.
  for (const number of ["1234567890123452", "4111111111111112", "9999999999999995"]) {
    assert.equal(scrubText(`processed ${number} bytes`), `processed ${number} bytes`, number);
  }
});

test("SSNs, phone numbers and SQL literals; English that starts like SQL is left alone", () => {
  assert.equal(scrubText("ssn 123-45-6789, not 000-12-3456"), "ssn <ssn>, not 000-12-3456");
  assert.equal(scrubText("call +44 20 7946 0958 or (415) 555-0123"), "call <phone> or <phone>");
  assert.equal(
    scrubText("query failed: SELECT name FROM users WHERE email = 'a@b.io' AND age > 41"),
    "query failed: SELECT name FROM users WHERE email = ? AND age > ?",
  );
  assert.equal(scrubText("update available: restart in 5 minutes"), "update available: restart in 5 minutes");
});
