// Free text is brought to one canonical form before the filter decides anything about it, so that a disguise (a
// fullwidth "＠", a zero-width space inside an address, "%2540", "&#64;") cannot change what a token looks like. The
// filter keeps only tokens it knows, so decoding can never let something out: it only lets known words be recognised
// and lets a detector choose the right placeholder. Every step is linear and the rounds are bounded.

/** Rounds of decoding: "%252540" needs three; a value encoded more often than this leaves as placeholders. */
const MAX_ROUNDS = 4;

// Text that needs none of the steps: printable ASCII and tabs or line breaks, no "%" and no "&".
const plainAscii = /^[\t\n\r\x20-\x24\x27-\x7e]*$/;
// Format characters (zero-width space and joiners, bidi controls, soft hyphen, BOM, ...) and variation selectors.
const invisible = /\p{Cf}|\u{034f}|[\u{fe00}-\u{fe0f}\u{e0100}-\u{e01ef}\u{115f}\u{1160}\u{3164}\u{ffa0}]/gu;
// Letters of other scripts that look like Latin ones (Unicode's confusables, the common part): folded to the Latin
// letter, so "раss" (Cyrillic р and а) is the key "pass" and its value is known for a secret.
const latin = "aeopcyxijsdqwABEKMHOPCTXIJSoaptvABEZHIKMNOPTYX";
const confusables =
  "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u051b\u051d\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0406\u0408\u0405\u03bf\u03b1\u03c1\u03c4\u03bd\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7";
const confusable = new RegExp(`[${confusables}]`, "g");
const percentRun = /(?:%[0-9a-f]{2})+/gi;
const entity = /&(#[0-9]{1,7}|#x[0-9a-f]{1,6}|[a-z]{2,8});?/gi;

/** The HTML entities a disguise would use: the separators of addresses, paths and assignments. Others stay as text. */
const namedEntities: ReadonlyMap<string, string> = new Map([
  ["amp", "&"],
  ["lt", "<"],
  ["gt", ">"],
  ["quot", '"'],
  ["apos", "'"],
  ["nbsp", " "],
  ["commat", "@"],
  ["period", "."],
  ["plus", "+"],
  ["percnt", "%"],
  ["sol", "/"],
  ["colon", ":"],
  ["equals", "="],
  ["lowbar", "_"],
  ["hyphen", "-"],
  ["dash", "-"],
  ["num", "#"],
  ["quest", "?"],
  ["comma", ","],
  ["semi", ";"],
  ["excl", "!"],
]);

const utf8 = new TextDecoder("utf-8");

/**
 * `text` in NFKC, without invisible characters, percent-decoded and entity-decoded until stable (bounded rounds).
 * Stops early, with what it has, once the text is more than `maxLength` long (a ligature that spells a phrase).
 */
export function normalise(text: string, maxLength = Number.POSITIVE_INFINITY): string {
  if (plainAscii.test(text)) return text;
  let current = text;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const composed = current.normalize("NFKC");
    if (composed.length > maxLength) return composed;
    const next = decodeEntities(percentDecode(foldConfusables(composed.replace(invisible, ""))));
    if (next === current) return next;
    current = next;
  }
  // What is left still encoded goes out as placeholders: no token of it is a word.
  return current.normalize("NFKC").replace(invisible, "");
}

function foldConfusables(text: string): string {
  return text.replace(confusable, (char) => latin[confusables.indexOf(char)]!);
}

/** Runs of %XX as UTF-8 (invalid bytes become U+FFFD, which no word contains). */
function percentDecode(text: string): string {
  if (!text.includes("%")) return text;
  return text.replace(percentRun, (run) => {
    const bytes = new Uint8Array(run.length / 3);
    for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(run.slice(i * 3 + 1, i * 3 + 3), 16);
    return utf8.decode(bytes);
  });
}

function decodeEntities(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(entity, (match, body: string) => {
    if (body[0] !== "#") return namedEntities.get(body.toLowerCase()) ?? match;
    const code = body[1] === "x" || body[1] === "X" ? Number.parseInt(body.slice(2), 16) : Number.parseInt(body.slice(1), 10);
    return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : "\ufffd";
  });
}
