import { isIPv6 } from "node:net";
import { EMAIL, IP, TEXT } from "./words.ts";

// One run of non-blank characters split into pieces: words (letters, digits, `_`, an apostrophe inside a word),
// single punctuation marks, and runs of anything else (symbols, emoji, braille: they could spell a value). Then the
// pieces that together make an e-mail address or an IP address are merged into one placeholder. One pass each.

export type Piece = { kind: "word" | "punct" | "placeholder"; text: string };

// Runs of non-ASCII text, matched in place (sticky): a word's letters, marks and digits; one punctuation mark; or a run
// of anything else.
const unicodeWord = /[\p{L}\p{M}\p{N}_]+/uy;
const unicodePunct = /\p{P}/uy;
const unicodeOther = /[^\p{L}\p{M}\p{N}\p{P}\p{ASCII}]+/uy;

/** 0 for a word character (letter, digit, `_`), 1 for punctuation, 2 for anything else; ASCII only. */
function asciiKind(code: number): number {
  if ((code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95) return 0;
  return code > 32 && code < 127 ? 1 : 2;
}

/** Where the non-ASCII run of `pattern` at `at` ends, or `at` when it does not match there. */
function runEnd(pattern: RegExp, text: string, at: number): number {
  pattern.lastIndex = at;
  return pattern.test(text) ? pattern.lastIndex : at;
}

export function scanPieces(text: string): Piece[] {
  const pieces: Piece[] = [];
  let wordStart = -1;
  const flush = (end: number) => {
    if (wordStart >= 0) pieces.push({ kind: "word", text: text.slice(wordStart, end) });
    wordStart = -1;
  };
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code < 128) {
      const kind = asciiKind(code);
      // "can't", "user's": an apostrophe between letters belongs to the word.
      const inWord = kind === 0 || (code === 39 && wordStart >= 0 && i + 1 < text.length && asciiKind(text.charCodeAt(i + 1)) === 0);
      if (inWord) {
        if (wordStart < 0) wordStart = i;
      } else {
        flush(i);
        pieces.push(kind === 1 ? { kind: "punct", text: text[i]! } : { kind: "placeholder", text: TEXT });
      }
      i++;
      continue;
    }
    const word = runEnd(unicodeWord, text, i);
    if (word > i) {
      if (wordStart < 0) wordStart = i;
      i = word;
      continue;
    }
    flush(i);
    const punct = runEnd(unicodePunct, text, i);
    if (punct > i) {
      pieces.push({ kind: "punct", text: text.slice(i, punct) });
      i = punct;
      continue;
    }
    pieces.push({ kind: "placeholder", text: TEXT });
    i = Math.max(runEnd(unicodeOther, text, i), i + 1);
  }
  flush(text.length);
  // Most chunks hold no address: the merge pass runs only on those with an "@", a ":" or a digit.
  return /[@:\d]/.test(text) ? mergeAddresses(pieces, text.includes(":")) : pieces;
}

const emailLocal = new Set([".", "_", "%", "+", "-"]);
const emailDomain = new Set([".", "-"]);

/** Pieces with every e-mail address (`x@y`, any domain, with or without a dot) and IP address made one placeholder. */
function mergeAddresses(pieces: Piece[], colon: boolean): Piece[] {
  const out: Piece[] = [];
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i]!;
    if (piece.text === "@" && out.at(-1)?.kind === "word" && pieces[i + 1]?.kind === "word") {
      while (out.length > 0 && (out.at(-1)!.kind === "word" || emailLocal.has(out.at(-1)!.text))) out.pop();
      let end = i + 1;
      while (end + 1 < pieces.length && (pieces[end + 1]!.kind === "word" || emailDomain.has(pieces[end + 1]!.text))) end++;
      out.push({ kind: "placeholder", text: EMAIL });
      i = end;
      continue;
    }
    const ipEnd = piece.kind === "word" ? ipAt(pieces, i, colon) : -1;
    if (ipEnd >= 0) {
      out.push({ kind: "placeholder", text: IP });
      i = ipEnd;
      continue;
    }
    out.push(piece);
  }
  return out;
}

const octet = /^\d{1,3}$/;

/** Where an IP address starting at pieces[i] ends (its last piece), or -1. */
function ipAt(pieces: Piece[], i: number, colon: boolean): number {
  // IPv4, its separators dots or dashes or underscores ("10.1.2.3", "ip-10-1-2-3.ec2.internal").
  const separator = pieces[i + 1]?.text;
  if (octet.test(pieces[i]!.text) && (separator === "." || separator === "-" || separator === "_")) {
    let k = i;
    let octets = 0;
    while (octets < 4 && octet.test(pieces[k]?.text ?? "") && Number(pieces[k]!.text) <= 255) {
      octets++;
      if (octets < 4 && pieces[k + 1]?.text !== separator) break;
      k += 2;
    }
    if (octets === 4) return k - 2;
  }
  return colon ? ipv6At(pieces, i) : -1;
}

const hexGroup = /^[0-9a-f]{1,4}$/i;

/** IPv6 in any of its notations ("2001:db8::1", "::ffff:10.0.0.1"): the longest valid address from here, or -1. */
function ipv6At(pieces: Piece[], i: number): number {
  if (!hexGroup.test(pieces[i]!.text) && pieces[i]!.text !== ":") return -1;
  let text = "";
  let best = -1;
  for (let k = i; k < pieces.length && text.length <= 45; k++) {
    const part = pieces[k]!;
    if (!(part.text === ":" || part.text === "." || (part.kind === "word" && /^[0-9a-f]{1,4}$/i.test(part.text)))) break;
    text += part.text;
    if (text.includes(":") && isIPv6(text)) best = k;
  }
  return best;
}
