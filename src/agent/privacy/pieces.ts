import { isIPv6 } from "node:net";
import { EMAIL, IP, TEXT } from "./words.ts";

// One run of non-blank characters split into pieces: words (letters, digits, `_`, an apostrophe inside a word),
// single punctuation marks, and runs of anything else (symbols, emoji, braille: they could spell a value). Then the
// pieces that together make an e-mail address or an IP address are merged into one placeholder. One pass each.

export type Piece = { kind: "word" | "punct" | "placeholder"; text: string };

const wordChar = /[\p{L}\p{M}\p{N}]/u;
const punctChar = /\p{P}/u;

function charKind(char: string): "word" | "punct" | "other" {
  const code = char.charCodeAt(0);
  if (code < 128) {
    if ((code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95) return "word";
    return code > 32 && code < 127 ? "punct" : "other";
  }
  if (wordChar.test(char)) return "word";
  return punctChar.test(char) ? "punct" : "other";
}

export function scanPieces(text: string): Piece[] {
  const pieces: Piece[] = [];
  let word = "";
  let other = false;
  const flush = () => {
    if (word !== "") pieces.push({ kind: "word", text: word });
    word = "";
  };
  const chars = [...text];
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i]!;
    let kind = charKind(char);
    // "can't", "user's": an apostrophe between letters belongs to the word.
    if (char === "'" && word !== "" && i + 1 < chars.length && charKind(chars[i + 1]!) === "word") kind = "word";
    if (kind === "other") {
      flush();
      if (!other) pieces.push({ kind: "placeholder", text: TEXT });
      other = true;
      continue;
    }
    other = false;
    if (kind === "word") word += char;
    else {
      flush();
      pieces.push({ kind: "punct", text: char });
    }
  }
  flush();
  return mergeAddresses(pieces);
}

const emailLocal = new Set([".", "_", "%", "+", "-"]);
const emailDomain = new Set([".", "-"]);

/** Pieces with every e-mail address (`x@y`, any domain, with or without a dot) and IP address made one placeholder. */
function mergeAddresses(pieces: Piece[]): Piece[] {
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
    const ipEnd = piece.kind === "word" ? ipAt(pieces, i) : -1;
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
function ipAt(pieces: Piece[], i: number): number {
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
  return ipv6At(pieces, i);
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
