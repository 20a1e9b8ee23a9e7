import { type ChunkStart, scrubCore } from "./chunk.ts";
import { carriesOn, credentialWindow, isCredentialNoun, WINDOW } from "./credential-sentence.ts";
import { normalise } from "./normalise.ts";
import { defaultVocabulary, type Vocabulary } from "./vocabulary.ts";
import { isSecretKey, keepWord, SECRET, TEXT } from "./words.ts";

// Free text (log bodies, span names, status and exception messages, event names, metric descriptions, attribute
// values) keeps only what is known to be safe: words of the vocabulary and punctuation. Every other token leaves as
// a typed placeholder (<num>, <email>, <ip>, <id>, <secret>, <text>), so "user Maria Garcia logged in from 10.0.0.7"
// leaves as "user <text> <text> logged in from <ip>". A filter that removes what it recognises as private misses
// every shape it has not seen; this one needs to recognise only what may stay.
// Bounded: one pass over the text by runs of non-blank characters ("chunks"); a chunk longer than MAX_TOKEN_CHARS
// leaves as LONG_TOKEN unread, so normalising and scanning a chunk costs a bounded amount, and nothing recurses.

/** The longest run of non-blank characters the filter reads; a longer one leaves as LONG_TOKEN. */
export const MAX_TOKEN_CHARS = 1024;
export const LONG_TOKEN = TEXT;

// Leading and trailing marks that are not part of a token: brackets, quotes, sentence punctuation.
const leading = new Set(["(", "[", "{", "<", '"', "'", "`"]);
const trailing = new Set([")", "]", "}", ">", '"', "'", "`", ".", ",", ";", ":", "!", "?", "="]);
const sentenceEnd = /[.!?:]/;
const quotes = new Set(['"', "'", "`"]);
/** Words after which the next chunk is a credential ("Bearer abc", "Authorization: Basic dXNl"). */
const authSchemes = new Set(["bearer", "basic", "digest", "token", "negotiate"]);
/** How many chunks a quoted secret or value may span ("password: 'correct horse battery staple'"). */
const MAX_QUOTED_CHUNKS = 64;

interface State {
  sentenceStart: boolean;
  /** What the next chunk is: a credential or a key=value's value. */
  next?: ChunkStart["mode"];
  /** Inside a quoted secret or value: the closing quote and how many more chunks it may take. */
  quote?: { char: string; left: number; mode: NonNullable<ChunkStart["mode"]> };
  /** After "Cookie:" every chunk up to the end of the line is the cookie. */
  cookieLine: boolean;
  /** The last chunk's trailing key, waiting for a separator chunk ("password" then "=" then "x"). */
  key: string;
  /** How many more words may stand before a credential's value in a sentence ("password is x"); 0 when none. */
  credential: number;
}

// Short texts repeat (attribute values, span and scope names, units): their results are kept, a bounded number of
// them per vocabulary, emptied when full. The result depends only on the text and the vocabulary.
const MEMO_MAX_CHARS = 64;
const MEMO_ENTRIES = 4096;
const memo = new WeakMap<Vocabulary, Map<string, string>>();

/** `text` with every token the vocabulary does not know replaced by a typed placeholder. */
export function scrubText(text: string, vocabulary: Vocabulary = defaultVocabulary()): string {
  if (text.length > MEMO_MAX_CHARS) return filterText(text, vocabulary);
  let results = memo.get(vocabulary);
  if (results === undefined) {
    results = new Map();
    memo.set(vocabulary, results);
  }
  const known = results.get(text);
  if (known !== undefined) return known;
  const result = filterText(text, vocabulary);
  if (results.size >= MEMO_ENTRIES) results.clear();
  results.set(text, result);
  return result;
}

function filterText(text: string, vocabulary: Vocabulary): string {
  const out: string[] = [];
  const state: State = { sentenceStart: true, cookieLine: false, key: "", credential: 0 };
  let start = 0;
  while (start < text.length) {
    const blank = isBlank(text.charCodeAt(start));
    let end = start + 1;
    while (end < text.length && isBlank(text.charCodeAt(end)) === blank) end++;
    const run = text.slice(start, end);
    start = end;
    if (blank) {
      const newline = run.includes("\n") || run.includes("\r");
      out.push(newline ? "\n" : " ");
      if (newline)
        Object.assign(state, { sentenceStart: true, cookieLine: false, next: undefined, quote: undefined, key: "", credential: 0 });
    } else out.push(plainWord(run, vocabulary, state) ?? scrubRun(run, vocabulary, state));
  }
  return out.join("");
}

function scrubRun(run: string, vocabulary: Vocabulary, state: State): string {
  if (run.length > MAX_TOKEN_CHARS) {
    state.sentenceStart = false;
    return LONG_TOKEN;
  }
  const normal = normalise(run, 2 * run.length + 8);
  // Decoding may reveal blanks ("%20", a no-break space): the decoded text is split again, once. A chunk that grew
  // much (a ligature of a whole phrase, "ﷺ") is not read: nothing in it is worth the cost.
  if (normal === run) return scrubChunk(run, vocabulary, state);
  if (normal.length > 2 * run.length + 8) return TEXT;
  const out: string[] = [];
  forEachRun(normal, (piece, isBlank) => out.push(isBlank ? " " : scrubChunk(piece, vocabulary, state)));
  return out.join("");
}

/**
 * The common chunk, a word of ASCII letters and digits with perhaps a full stop or comma after it, taken without the
 * general machinery (the same rule, faster); undefined for any other chunk, or when the state is not plain.
 */
function plainWord(run: string, vocabulary: Vocabulary, state: State): string | undefined {
  if (run.length > 64 || state.next !== undefined || state.quote !== undefined || state.cookieLine) return undefined;
  let end = run.length;
  const last = run.charCodeAt(end - 1);
  if (last === 46 || last === 44 || last === 33 || last === 63) end--; // . , ! ?
  if (end === 0) return undefined;
  for (let i = 0; i < end; i++) {
    const code = run.charCodeAt(i);
    if (!((code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122))) return undefined;
  }
  const word = end === run.length ? run : run.slice(0, end);
  let kept = keepWord(word, vocabulary, { sentenceStart: state.sentenceStart, value: false });
  const lower = word.toLowerCase();
  if (state.credential > 0 || isCredentialNoun(lower)) {
    const credential = credentialWindow(lower, kept, state.credential);
    kept = credential.out;
    state.credential = end < run.length ? 0 : credential.window;
  }
  state.sentenceStart = end < run.length && last !== 44;
  state.key = end === run.length ? word : "";
  if (end === run.length && authSchemes.has(lower) && run.charCodeAt(0) <= 90) state.next = "secret";
  return end === run.length ? kept : kept + run[end];
}

function scrubChunk(chunk: string, vocabulary: Vocabulary, state: State): string {
  if (chunk.length > MAX_TOKEN_CHARS) return LONG_TOKEN;
  if (state.cookieLine) return SECRET;
  if (state.quote) return quotedChunk(chunk, vocabulary, state);
  let start = 0;
  while (start < chunk.length && leading.has(chunk[start]!)) start++;
  let end = chunk.length;
  while (end > start && trailing.has(chunk[end - 1]!)) end--;
  const lead = chunk.slice(0, start);
  const core = chunk.slice(start, end);
  const trail = chunk.slice(end);
  const mode = state.next;
  state.next = undefined;
  if (mode === "secret" && authSchemes.has(core.toLowerCase())) {
    // "Authorization: Bearer abc": the scheme may show, the credential after it may not.
    state.next = "secret";
    return chunk;
  }
  if (mode && lead !== "" && quotes.has(lead.at(-1)!) && !trail.includes(lead.at(-1)!)) {
    // A quoted value that goes on past this chunk: the rest of it, up to the closing quote, is the same value.
    state.quote = { char: lead.at(-1)!, left: MAX_QUOTED_CHUNKS, mode };
    return `${lead}${mode === "secret" ? SECRET : scrubCore(core, vocabulary, { sentenceStart: false, mode }).text}`;
  }
  if (core === "") return afterSeparator(chunk, state);
  const credential = mode === undefined ? state.credential : 0;
  state.credential = 0;
  const lower = core.toLowerCase();
  // A quoted word after the noun is its value, whatever word it is ("password is 'correct horse'").
  const quoted = lead !== "" && quotes.has(lead.at(-1)!);
  if (credential > 0 && (quoted || !carriesOn(lower))) return credentialValue(lead, trail, state, quoted ? 0 : credential - 1);
  if (mode === undefined && trail === "") state.credential = isCredentialNoun(lower) ? WINDOW : Math.max(credential - 1, 0);
  const { text, end: chunkEnd } = scrubCore(core, vocabulary, { sentenceStart: state.sentenceStart, mode });
  state.sentenceStart = sentenceEnd.test(trail);
  const key = chunkEnd.key;
  const separator = trail.includes("=") ? "=" : trail.includes(":") ? ":" : undefined;
  if (separator && /^(?:set-)?cookie$/i.test(key)) state.cookieLine = true;
  else if (separator) state.next = isSecretKey(key) ? "secret" : separator === "=" ? "value" : undefined;
  else if (mode === undefined && authSchemes.has(core.toLowerCase()) && /^\p{Lu}/u.test(core)) state.next = "secret";
  state.key = separator ? "" : key;
  if (chunkEnd.quote && !trail.includes(chunkEnd.quote.char)) state.quote = { ...chunkEnd.quote, left: MAX_QUOTED_CHUNKS };
  return `${lead}${text}${trail}`;
}

/** The value of a credential named in a sentence ("password is 'swordfish'"), the rest of its quote included. */
function credentialValue(lead: string, trail: string, state: State, window: number): string {
  // Not a word the vocabulary knows (the general path's chunks are not plain words): the value may still follow.
  if (trail === "") state.credential = window;
  const quote = lead.at(-1);
  if (quote !== undefined && quotes.has(quote) && !trail.includes(quote))
    state.quote = { char: quote, left: MAX_QUOTED_CHUNKS, mode: "secret" };
  state.sentenceStart = sentenceEnd.test(trail);
  return `${lead}${SECRET}${trail}`;
}

/** A chunk of punctuation only: "=" or ":" standing alone between a key and its value ("password = x"). */
function afterSeparator(chunk: string, state: State): string {
  state.credential = 0;
  if (state.key !== "" && (chunk === "=" || chunk === ":")) {
    if (/^(?:set-)?cookie$/i.test(state.key) && chunk === ":") state.cookieLine = true;
    else state.next = isSecretKey(state.key) ? "secret" : chunk === "=" ? "value" : undefined;
  } else if (chunk === "=") state.next = "value";
  state.key = "";
  if (sentenceEnd.test(chunk)) state.sentenceStart = true;
  return chunk;
}

/**
 * A chunk inside a quoted value: nothing of a secret shows, a value leaves as <text>. What follows the closing quote
 * in the same chunk ("horse',next=1") is free text again.
 */
function quotedChunk(chunk: string, vocabulary: Vocabulary, state: State): string {
  const quote = state.quote!;
  const close = chunk.indexOf(quote.char);
  if (close === -1) {
    if (--quote.left === 0) state.quote = undefined;
    return quote.mode === "secret" ? "" : TEXT;
  }
  state.quote = undefined;
  const inside = close === 0 || quote.mode === "secret" ? "" : TEXT;
  const rest = chunk.slice(close + 1);
  return `${inside}${quote.char}${rest === "" ? "" : scrubChunk(rest, vocabulary, state)}`;
}

/** Calls `visit` for each run of blank and of non-blank characters of `text`, in order: one pass, no regex. */
function forEachRun(text: string, visit: (run: string, blank: boolean) => void): void {
  let start = 0;
  while (start < text.length) {
    const blank = isBlank(text.charCodeAt(start));
    let end = start + 1;
    while (end < text.length && isBlank(text.charCodeAt(end)) === blank) end++;
    visit(text.slice(start, end), blank);
    start = end;
  }
}

/** Blank characters (what a regex's `\s` matches, less U+FEFF: a zero-width character is stripped, not a blank). */
function isBlank(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000
  );
}
