import assert from "node:assert/strict";
import { test } from "node:test";
import { LONG_TOKEN, MAX_TOKEN_CHARS, scrubText } from "../../src/sidecar/privacy/scrub.ts";
import { createVocabulary } from "../../src/sidecar/privacy/vocabulary.ts";

// Free text keeps only vocabulary words and punctuation; everything else leaves as a typed placeholder.

const cases = (pairs: [string, string][]) => {
  for (const [text, expected] of pairs) assert.equal(scrubText(text), expected, JSON.stringify(text));
};

test("the issue's examples: constants stay, parameters become placeholders", () => {
  cases([
    ["slow query on table customer_orders took 2314 ms", "slow query on table <text> took <num> ms"],
    ["user Maria Garcia logged in", "user <text> <text> logged in"],
    ["Postgres connection pool nearly exhausted", "Postgres connection pool nearly exhausted"],
    ["timeout after 30s waiting for postgres (pool_size=20)", "timeout after <num>s waiting for postgres (pool_size=<num>)"],
    ["request latency", "request latency"],
    ["platform_http_requests_latency", "platform_http_requests_latency"],
  ]);
});

test("a capitalised word inside a sentence is a name unless the product's vocabulary has it", () => {
  cases([
    ["ticket closed by Rose", "ticket closed by <text>"],
    ["Payment failed for the ticket", "Payment failed for the ticket"], // sentence-initial: a capital says nothing
    ["approved by Bill Young", "approved by <text> <text>"],
    ["run failed: TimeoutError in Postgres", "run failed: TimeoutError in Postgres"],
    ["KeyError raised by the HTTP client", "KeyError raised by the HTTP client"],
    ["approved by BILL", "approved by <text>"],
  ]);
});

test("an English word that is also a person's name is not a word, in any case and at the start of a sentence", () => {
  cases([
    ["Rose closed the ticket", "<text> closed the ticket"],
    ["refund approved. Bill will follow", "refund approved. <text> will follow"],
    ["user mark green logged in", "user <text> <text> logged in"],
    ["approved by young", "approved by <text>"],
    // Names that a log line cannot do without as words stay words ("will", "unique"); each alone names nobody.
    ["duplicate key value violates unique constraint", "duplicate key value violates unique constraint"],
  ]);
});

test("a credential named in a sentence: the word that follows as its value is <secret>, an English word too", () => {
  cases([
    ["the password is swordfish", "the password is <secret>"],
    ["Password was reset to dragon.", "Password was reset to <secret>."],
    ["the pin is 'correct horse' ok", "the pin is '<secret> ' ok"],
    ["new passphrase for user alice is sunshine", "new passphrase for user <secret> is <secret>"],
    // What happened to it is not its value.
    ["password is incorrect", "password is incorrect"],
    ["token expired for the run", "token expired for the run"],
    ["password reset requested", "password reset requested"],
  ]);
});

test("a dotted name (a host, a file, a module) leaves only when the product knows it whole", () => {
  cases([
    ["connected to payments.internal.corp", "connected to <text>"],
    ["resolving Orders.Acme.Example failed", "resolving <text> failed"],
    ["connected to billing.internal", "connected to <text>"], // product words, but a host name of them
    ["read customers.csv", "read <text>"],
    ["service.name is required", "service.name is required"],
  ]);
});

test("numbers in any grouping leave as <num>: cards, phones, SSNs, dates, decimal IPs", () => {
  cases([
    ["card 4111.1111.1111.1111 declined", "card <num>.<num>.<num>.<num> declined"],
    ["card 4111  1111  1111  1111", "card <num> <num> <num> <num>"],
    ["card 4111/1111/1111/1111", "card <num>/<num>/<num>/<num>"],
    ["call 415 555 0100 or 4155550100 or +1 (415) 555-0100", "call <num> <num> <num> or <num> or +<num> (<num>) <num>-<num>"],
    ["ssn 123-45-6789 on file, born 1984-03-12", "<text> <num>-<num>-<num> on file, born <num>-<num>-<num>"],
    ["from 3232235777", "from <num>"],
  ]);
});

test("e-mail addresses become <email> under every disguise", () => {
  for (const address of [
    "alice.smith@corp.example",
    "alice\u200b@corp.example",
    "alice＠corp.example",
    "alice%40corp.example",
    "alice%2540corp.example",
    "alice%2Bops%40corp.example",
    "alice&#64;corp.example",
    "alice&commat;corp.example",
    "alice@intranet",
    "mark@corp.example",
  ]) {
    assert.equal(scrubText(`mail to ${address} bounced`), "mail to <email> bounced", address);
  }
});

test("IP addresses become <ip>: dotted, with a port, IPv6, inside host names", () => {
  cases([
    ["from 203.0.113.7:5432 and [2001:db8::1]:443", "from <ip> and [<ip>"],
    ["from fe80::1.", "from <ip>."],
    ["host ip-10-1-2-3.ec2.internal is down", "host <text> is down"],
    ["value 999.1.1.1 is not an address", "value <num>.<num>.<num>.<num> is not an address"],
  ]);
});

test("credentials: the key stays, the value is <secret> whatever it is, English words too", () => {
  cases([
    ["pw=hunter", "<text>=<secret>"],
    ["pass: swordfish", "pass: <secret>"],
    ["passphrase=correct", "passphrase=<secret>"],
    ["password = 'correct horse battery'", "password = '<secret>  '"],
    ["Authorization: Bearer 9f8e7d6c5b4a", "Authorization: Bearer <secret>"],
    ['{"api_key": "secret"}', '{"<text>": "<secret>"}'],
    ["Cookie: sid=ab12; theme=dark\nnext line", "Cookie: <secret> <secret>\nnext line"],
    ["session=ab12", "session=<secret>"],
    ["X-Api-Key: zz9 then more", "<text>-Api-Key: <secret> then more"],
    ["pw='correct horse battery' done", "<text>=<secret>  ' done"],
    ["password = 'correct horse',next=johnsmith42 done", "password = '<secret> ',next=<id> done"],
  ]);
});

test("known credential shapes are <secret>, ids <id>, whatever surrounds them", () => {
  cases([
    ["token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqYW5lIn0.c2lnbmF0dXJl expired", "token <secret> expired"],
    ["keys sk-ant-api03-AbC ghp_xyz AKIAIOSFODNN7EXAMPLE", "keys <secret> <secret> <secret>"],
    ["secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "secret <secret>"],
    ["user 0b9e1d2c-7a44-4f0e-8c1b-5e6f7a8b9c0d", "user <id>"],
    ["trace 5b8efff798038103d269b633813fc60c", "trace <secret>"],
  ]);
});

test("URLs keep a known scheme and the route template; host names and credentials, query and fragment go", () => {
  cases([
    [
      "GET https://bob:pw123@api.acme.io:8443/threads/abc/runs?token=z#f failed",
      "GET https://<text>:<num>/threads/{thread_id}/runs failed",
    ],
    ["see postgres://svc:pw@10.0.0.5:5432/app.", "see postgres://<ip>:<num>/{param}."],
    ["GET /users/johnsmith?x=1", "GET /{param}/{param}"],
    ["GET /v1/status", "GET /v1/status"],
  ]);
});

test("symbols, other scripts and homoglyphs are not words", () => {
  cases([
    ["user jürgen müller", "user <text> <text>"],
    ["user \u0430lice", "user <text>"], // Cyrillic а
    ["user ⠁⠇⠊⠉⠑ logged in", "user <text> logged in"], // braille
    ["user ｃｏｎｎｅｃｔｅｄ", "user connected"], // fullwidth letters normalise to a word: only a word leaves
  ]);
});

test("the operator's privacy.vocabulary adds words, capitalised or not; the rule stays", () => {
  const vocabulary = createVocabulary(["Acme", "checkout"]);
  assert.equal(scrubText("Checkout failed at Acme for Maria", vocabulary), "Checkout failed at Acme for <text>");
  assert.equal(scrubText("Checkout failed at Acme for Maria"), "Checkout failed at <text> for <text>");
});

test("adversarial megabyte inputs are scrubbed in one pass (no catastrophic backtracking)", () => {
  const megabyte = 1 << 20;
  const seeds = ["a", "a@", "a.", "eyJa.", "1.", "a:", "::", "key", 'api_key:"', "https://", "x@y.", "Bearer ", "sk-"]
    .concat(["a1-", `${"f".repeat(70)}=`, "select ", "SELECT a FROM t WHERE x='", "1 ", "1-", "+1 ", "(555) ", "%40"])
    .concat(["a%", "Ab1+/", "Ab1=", "/a.", "ü@", "AKIA", "%25", "&#", "\u200b", "ﷺ ", "password: '", "Cookie: "]);
  // The bound is relative to a megabyte of plain words on the same machine at the same time (the machine may be
  // loaded): a pass over a megabyte takes milliseconds to seconds, backtracking over it minutes to hours.
  const timed = (text: string) => {
    const started = performance.now();
    scrubText(text);
    return performance.now() - started;
  };
  const plain = timed("word ".repeat(megabyte / 5));
  for (const seed of seeds) {
    const ms = timed(seed.repeat(Math.ceil(megabyte / seed.length)).slice(0, megabyte));
    assert.ok(
      ms < Math.max(5_000, 30 * plain),
      `seed ${JSON.stringify(seed)}: ${Math.round(ms)} ms for a megabyte (plain words: ${Math.round(plain)} ms)`,
    );
  }
  // A single megabyte-long token leaves as a placeholder, whole.
  assert.equal(scrubText("a1".repeat(megabyte / 2)), LONG_TOKEN);
});

test("a token longer than MAX_TOKEN_CHARS leaves as a placeholder unread; the text around it as usual", () => {
  const atLimit = "a1".repeat(MAX_TOKEN_CHARS / 2);
  assert.equal(scrubText(`key ${atLimit} from 203.0.113.7`), "key <secret> from <ip>");
  for (const token of [`${atLimit}x`, `https://bob:pw@h.example/?q=${"z".repeat(MAX_TOKEN_CHARS)}`, "é".repeat(MAX_TOKEN_CHARS + 1)]) {
    assert.equal(scrubText(`mail alice@corp.example\n${token}\tthen 203.0.113.7`), `mail <email>\n${LONG_TOKEN} then <ip>`);
  }
  // Blanks other than the space end a token too: a long run of short words is read word by word.
  const words = Array.from({ length: 2000 }, () => "word").join("\u00a0");
  assert.equal(scrubText(words), Array.from({ length: 2000 }, () => "word").join(" "));
});

test("many megabytes of quoted text with blanks and escapes: linear time, nothing of it leaves", () => {
  const literal = "it''s \\' a hunter2 ".repeat(250_000);
  const started = performance.now();
  const out = scrubText(`SELECT a FROM t WHERE x = '${literal}' AND y = "b c" AND z = 42`);
  console.log(`${(literal.length / 2 ** 20).toFixed(0)} MiB of quoted text: ${Math.round(performance.now() - started)} ms`);
  // Linear: minutes would mean backtracking; seconds is the pass itself, on a loaded machine.
  assert.ok(performance.now() - started < 60_000);
  assert.ok(!out.includes("hunter2"));
  assert.ok(out.startsWith("SELECT a FROM <text> WHERE <text> = '<text>"), out.slice(0, 80));
});
