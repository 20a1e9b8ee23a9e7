import type { Vocabulary } from "./vocabulary.ts";

// The deny-by-default rule for one word of free text: a word is kept only when the vocabulary knows it; anything else
// leaves as a typed placeholder. Detectors only choose the type.

export const NUM = "<num>";
export const EMAIL = "<email>";
export const IP = "<ip>";
export const ID = "<id>";
export const SECRET = "<secret>";
export const TEXT = "<text>";

/** Where a word stands, which decides how much of the vocabulary applies to it. */
export interface WordContext {
  /** First word of the text, of a line or after `.`, `!`, `?`, `:`: a capital letter there is not a name's. */
  sentenceStart: boolean;
  /** A value (after `=`): only the product's and operator's words are kept, never a mere English word. */
  value: boolean;
}

const digitsOnly = /^\p{N}+$/u;
const hasDigit = /\p{N}/u;
const lowerLetters = /^\p{Ll}+$/u;
// A word written as a sentence starts it: Capitalised or in capitals.
const sentenceCase = /^\p{Lu}(?:\p{Ll}*|\p{Lu}*)$/u;
// A number with its unit ("30s", "250ms", "4GiB", "3x"): the number goes, the unit stays.
const quantity = /^\p{N}+(ms|s|m|h|d|us|ns|kb|mb|gb|kib|mib|gib|b|k|x)$/iu;
const contraction = /^(\p{L}+)'(s|t|re|ve|ll|d|m)$/iu;

/** The word as it leaves: itself when the vocabulary knows it where it stands, else its placeholder. */
export function keepWord(word: string, vocabulary: Vocabulary, context: WordContext): string {
  const lower = word.toLowerCase();
  if (vocabulary.product.has(lower)) return word;
  let digits = 0;
  let upper = 0;
  let other = 0;
  for (let i = 0; i < word.length; i++) {
    const code = word.charCodeAt(i);
    if (code >= 48 && code <= 57) digits++;
    else if (code >= 65 && code <= 90) upper++;
    else if (code < 97 || code > 122) other++;
  }
  if (other > 0) return keepOtherWord(word, lower, vocabulary, context);
  if (digits > 0) return withDigits(word, digits);
  if (context.value || !vocabulary.english.has(lower)) return TEXT;
  // A capitalised word inside a sentence is a name (Maria, Rose, Bill) unless the product's vocabulary says otherwise.
  if (upper === 0) return word;
  const sentenceCased = upper === word.length || (upper === 1 && word.charCodeAt(0) <= 90);
  return context.sentenceStart && sentenceCased ? word : TEXT;
}

/** A word with digits: a number, a quantity ("30s": the number goes), a key, or an id. */
function withDigits(word: string, digits: number): string {
  if (digits === word.length) return NUM;
  const unit = quantity.exec(word);
  return unit ? `${NUM}${unit[1]}` : looksLikeKey(word) ? SECRET : ID;
}

/** The same rule for a word with other characters than ASCII letters and digits: `_`, an apostrophe, other scripts. */
function keepOtherWord(word: string, lower: string, vocabulary: Vocabulary, context: WordContext): string {
  if (digitsOnly.test(word)) return NUM;
  if (hasDigit.test(word)) return withDigits(word, 1);
  if (context.value || word.includes("_")) return TEXT;
  const parts = contraction.exec(word);
  const base = parts ? parts[1]! : word;
  if (!vocabulary.english.has(parts ? base.toLowerCase() : lower)) return TEXT;
  if (lowerLetters.test(base) || (context.sentenceStart && sentenceCase.test(base))) return word;
  return TEXT;
}

/** Letters and digits in both cases, or 16 and more of them: a key or token rather than an id like `ec2` or `v8`. */
function looksLikeKey(word: string): boolean {
  return word.length >= 16 || (/[a-z]/.test(word) && /[A-Z]/.test(word) && word.length >= 8);
}

// Keys whose value is a credential: the value leaves as <secret> whatever it is, an English word too ("pass: swordfish").
const secretParts = new Set(
  `password passwd passphrase passcode pass pwd pw secret secrets token apikey key auth authorization credential
  credentials cred creds cookie session sessionid sid jsessionid phpsessid csrf xsrf otp pin bearer signature sig
  private privatekey jwt`.split(/\s+/),
);
const secretSuffixes = ["password", "passwd", "secret", "token", "apikey", "sessionid", "cookie", "passphrase", "credentials"];

/** Whether `key` (`api_key`, `X-Api-Key`, `dbPassword`, `pw`) names a credential. */
export function isSecretKey(key: string): boolean {
  if (key === "" || key.length > 64) return false;
  const lower = key.toLowerCase();
  if (secretSuffixes.some((suffix) => lower.endsWith(suffix))) return true;
  return key
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .some((part) => secretParts.has(part));
}
