// Generators of private values of every class the privacy filter must keep home, and the disguises an attacker
// (or an odd client) wraps them in, for the property test. Seeded by fast-check, so a failure names its seed and path.
import fc from "fast-check";
import { defaultVocabulary } from "../../src/sidecar/privacy/vocabulary.ts";

/** A planted value and the parts of it that must not leave (compared case-insensitively). */
export interface Planted {
  kind: string;
  value: string;
  secrets: string[];
}

const pick = <T>(items: readonly T[]) => fc.constantFrom(...items);
const digits = (n: number) => fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }).map((d) => d.join(""));
const alnum = (min: number, max: number) =>
  fc.stringMatching(new RegExp(`^[a-z0-9]{${min},${max}}$`)).filter((s) => /\d/.test(s) && /[a-z]/.test(s));
const b64 = (n: number) =>
  fc.stringMatching(new RegExp(`^[A-Za-z0-9_-]{${n}}$`)).filter((s) => /\d/.test(s) && /[A-Z]/.test(s) && /[a-z]/.test(s));
const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`)).filter((s) => /\d/.test(s));

// First names and surnames include those that are English words too (Rose, Bill, Mark; Green, Young, Brown): in lower
// case, or first in a sentence, they are still a person's. Grace stays a word: "grace period" is the product's.
const FIRST = ["Maria", "Rose", "Bill", "Mark", "Grace", "Peter", "Jürgen", "Aisha", "Wei", "Olga", "Carol", "Ruby"];
const LAST = ["Garcia", "Nguyen", "Kowalski", "Okafor", "Schmidt", "Fernández", "Yamamoto", "Iyer", "Green", "Young", "Brown", "White"];
const productWords = defaultVocabulary().product;
const SEPARATORS = ["", " ", "  ", "-", ".", "/"];

const luhnComplete = (body: string): string => {
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let d = Number(body[body.length - 1 - i]);
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return body + ((10 - (sum % 10)) % 10);
};

const groupsOf = (text: string, size: number) => text.match(new RegExp(`.{1,${size}}`, "g"))!;

export const CLASSES: Record<string, fc.Arbitrary<Planted>> = {
  email: fc
    .tuple(alnum(4, 10), pick(["", "+ops", "+billing7"]), fc.stringMatching(/^[a-z]{3,8}$/), pick([".example", ".example.co.uk", ""]))
    .map(([local, tag, host, tld]) => ({ kind: "email", value: `${local}${tag}@${host}${tld}`, secrets: [local, `${local}${tag}@`] })),
  name: fc.tuple(pick(FIRST), pick(LAST), pick(["", "Dr. "])).map(([first, last, title]) => ({
    kind: "name",
    value: `${title}${first} ${last}`,
    secrets: [`${first} ${last}`, last, ...(productWords.has(first.toLowerCase()) ? [] : [first])],
  })),
  phone: fc
    .tuple(digits(3), digits(3), digits(4), pick(["", "+1 ", "+1-", "(", "001 "]), pick([" ", "-", ".", "", "  "]))
    .map(([area, exchange, line, prefix, sep]) => {
      const value = prefix === "(" ? `(${area}) ${exchange}${sep}${line}` : `${prefix}${area}${sep}${exchange}${sep}${line}`;
      return { kind: "phone", value, secrets: [`${area}${exchange}${line}`, `${exchange}${sep}${line}`, line] };
    }),
  card: fc.tuple(pick(["4", "51", "37", "6011"]), digits(14), pick(SEPARATORS)).map(([prefix, body, sep]) => {
    const number = luhnComplete((prefix + body).slice(0, 15));
    return { kind: "card", value: groupsOf(number, 4).join(sep), secrets: [number, ...groupsOf(number, 4).filter((g) => g.length === 4)] };
  }),
  ssn: fc.tuple(digits(3), digits(2), digits(4), pick(["-", " ", "", "."])).map(([a, g, s, sep]) => ({
    kind: "ssn",
    value: `${a}${sep}${g}${sep}${s}`,
    secrets: [`${a}${g}${s}`, s],
  })),
  iban: fc
    .tuple(pick(["GB", "DE", "FR", "NL"]), digits(2), fc.stringMatching(/^[A-Z]{4}$/), digits(14), pick([" ", ""]))
    .map(([country, check, bank, account, sep]) => {
      const iban = `${country}${check}${bank}${account}`;
      return { kind: "iban", value: groupsOf(iban, 4).join(sep), secrets: [iban, account.slice(0, 6), account.slice(-6)] };
    }),
  "NI number": fc
    .tuple(pick(["QQ", "AB", "JG"]), digits(6), pick(["A", "B", "C", "D"]), pick([" ", ""]))
    .map(([prefix, number, suffix, sep]) => ({
      kind: "NI number",
      value: [prefix, ...groupsOf(number, 2), suffix].join(sep),
      secrets: [`${prefix}${number}${suffix}`, number],
    })),
  ipv4: fc
    .tuple(
      fc.integer({ min: 11, max: 223 }),
      fc.integer({ min: 100, max: 255 }),
      fc.integer({ min: 100, max: 255 }),
      fc.integer({ min: 100, max: 254 }),
    )
    .chain(([a, b, c, d]) => {
      const dotted = `${a}.${b}.${c}.${d}`;
      const integer = String(((a * 256 + b) * 256 + c) * 256 + d);
      const forms = [dotted, `${dotted}:5432`, `ip-${a}-${b}-${c}-${d}.ec2.internal`, integer, `http://${dotted}/x`, `[${dotted}]`];
      return pick(forms).map((value) => ({ kind: "ipv4", value, secrets: [dotted, `${a}-${b}-${c}-${d}`, integer, `${b}.${c}`] }));
    }),
  ipv6: fc.tuple(hex(4), hex(4), hex(4), hex(4)).chain(([a, b, c, d]) => {
    const forms = [`2001:db8:${a}:${b}::${c}:${d}`, `[2001:db8:${a}::${d}]:443`, `fe80::${a}:${b}%eth0`, `::ffff:${c}:${d}`];
    return pick(forms).map((value) => ({ kind: "ipv6", value, secrets: [`${a}:${b}`, `${c}:${d}`, a, d] }));
  }),
  "provider key": fc
    .tuple(pick(["AKIA", "ghp_", "xoxb-", "sk-", "sk_live_", "AIza", "glpat-", "lsv2_pt_"]), b64(24))
    .map(([prefix, body]) => ({ kind: "provider key", value: `${prefix}${body}`, secrets: [body.slice(0, 12), body.slice(-12)] })),
  token: fc.oneof(hex(32), b64(40)).map((token) => ({ kind: "token", value: token, secrets: [token.slice(0, 10), token.slice(-10)] })),
  jwt: fc.tuple(b64(20), b64(30), b64(24)).map(([h, p, s]) => ({ kind: "jwt", value: `eyJ${h}.eyJ${p}.${s}`, secrets: [p, s] })),
  "basic-auth URL": fc.tuple(alnum(4, 8), alnum(6, 12), fc.stringMatching(/^[a-z]{4,8}$/)).map(([user, password, host]) => ({
    kind: "basic-auth URL",
    value: `https://${user}:${password}@${host}.example/api/x`,
    secrets: [user, password, `${host}.example`],
  })),
  "key=value secret": fc
    .tuple(pick(["password", "pw", "pass", "passphrase", "secret", "token", "api_key", "client_secret", "DB_PASSWORD", "X-Api-Key"]))
    .chain(([key]) =>
      fc
        .tuple(pick(["=", ": ", ":", " = ", '="', "='"]), fc.oneof(alnum(4, 12), pick(["swordfish", "dragon", "sunshine", "letmein"])))
        .map(([sep, secret]) => ({
          kind: "key=value secret",
          value: `${key}${sep}${secret}${sep.endsWith('"') ? '"' : sep.endsWith("'") ? "'" : ""}`,
          secrets: [secret],
        })),
    ),
  "quoted passphrase": fc
    .tuple(
      pick(["password", "pw", "passphrase", "secret", "DB_PASSWORD"]),
      pick(['="', "='", ": '", ' = "', '": "']),
      fc.array(pick(["correct", "horse", "battery", "staple", "purple", "monkey", "dishwasher", "river"]), { minLength: 2, maxLength: 4 }),
    )
    .map(([key, sep, words]) => ({
      kind: "quoted passphrase",
      value: `${key}${sep}${words.join(" ")}${sep.trim().at(-1)} and more`,
      secrets: words.slice(1).map((word, i) => `${words[i]} ${word}`),
    })),
  "PEM block": fc.tuple(b64(48), b64(48)).map(([a, b]) => ({
    kind: "PEM block",
    value: `-----BEGIN RSA PRIVATE KEY-----\nMII${a}\n${b}==\n-----END RSA PRIVATE KEY-----`,
    secrets: [a.slice(0, 16), b.slice(0, 16)],
  })),
  cookie: fc
    .tuple(pick(["Cookie: sid=", "Set-Cookie: session=", "cookie: JSESSIONID=", "session_id="]), alnum(3, 6))
    .map(([prefix, value]) => ({ kind: "cookie", value: `${prefix}${value}; Path=/`, secrets: [value] })),
  "home directory": fc
    .tuple(pick(["/home/", "/Users/", "C:\\Users\\", "~", "/users/{"]), fc.stringMatching(/^[a-z]{3,6}[0-9]{0,2}$/))
    .filter(([, user]) => user.length >= 4)
    .map(([prefix, user]) => ({
      kind: "home directory",
      value: `${prefix}${user}${prefix.endsWith("{") ? "}" : ""}/.ssh/id_rsa`,
      secrets: [user],
    })),
  "credential in a sentence": fc
    .tuple(
      pick(["the password is", "Password was set to", "passphrase for user", "the pin is", "your token is", "secret now"]),
      pick(["swordfish", "dragon", "sunshine", "letmein", "orange", "monkey", "river", "Tr0ub4dor"]),
    )
    .map(([lead, secret]) => ({ kind: "credential in a sentence", value: `${lead} ${secret}`, secrets: [` ${secret}`] })),
  "host name of words": fc
    .tuple(pick(["payments", "orders", "billing", "mail", "files", "staging", "north"]), pick(["internal", "prod", "eu", "office"]))
    .chain(([service, zone]) =>
      pick([".corp", ".example", ".local", ".co.uk", ""]).map((tld) => ({
        kind: "host name of words",
        value: `${service}.${zone}${tld}`,
        secrets: [`${service}.${zone}`],
      })),
    ),
  "street address": fc
    .tuple(fc.integer({ min: 10, max: 9999 }), pick(LAST), pick(["Street", "Avenue", "Rd", "Lane", "st."]))
    .map(([number, street, type]) => ({
      kind: "street address",
      value: `${number} ${street} ${type}, Springfield`,
      secrets: [`${number} ${street}`, street],
    })),
  "date of birth": fc
    .tuple(fc.integer({ min: 1930, max: 2010 }), fc.integer({ min: 10, max: 12 }), fc.integer({ min: 13, max: 28 }))
    .chain(([y, m, d]) =>
      pick([`DOB ${y}-${m}-${d}`, `born ${d}/${m}/${y}`, `date_of_birth=${y}${m}${d}`, `birthday ${d}.${m}.${y}`]).map((value) => ({
        kind: "date of birth",
        value,
        secrets: [String(y), `${y}-${m}-${d}`, `${d}/${m}/${y}`],
      })),
    ),
};

// ---- disguises ----

const HOMOGLYPHS: Record<string, string> = { a: "а", e: "е", o: "о", p: "р", c: "с", x: "х", i: "і", y: "у" };
const ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u202e"];

const percentAll = (text: string) => [...new TextEncoder().encode(text)].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");
const percentSome = (text: string) => text.replace(/[^A-Za-z0-9]/g, (c) => percentAll(c));
const entities = (text: string) => text.replace(/[^A-Za-z0-9 ]/g, (c) => `&#${c.codePointAt(0)};`);
const fullwidth = (text: string) => text.replace(/[!-~]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));

/** A disguise: a name, and how it rewrites a value (with a random seed for the placement of its changes). */
export const DISGUISES: Record<string, (text: string, seed: number) => string> = {
  none: (text) => text,
  "upper case": (text) => text.toUpperCase(),
  "lower case": (text) => text.toLowerCase(),
  "title case": (text) => text.replace(/\b\p{L}/gu, (c) => c.toUpperCase()),
  "percent-encoded separators": percentSome,
  "percent-encoded twice": (text) => percentSome(percentSome(text)),
  "percent-encoded entirely": percentAll,
  "HTML entities": entities,
  "HTML entities, then percent-encoded": (text) => percentSome(entities(text)),
  fullwidth,
  homoglyphs: (text, seed) => text.replace(/[aeopcxiy]/g, (c, at: number) => ((at + seed) % 2 === 0 ? HOMOGLYPHS[c]! : c)),
  "zero-width characters": (text, seed) =>
    [...text].map((c, at) => ((at * 7 + seed) % 3 === 0 ? `${c}${ZERO_WIDTH[(at + seed) % ZERO_WIDTH.length]}` : c)).join(""),
};
