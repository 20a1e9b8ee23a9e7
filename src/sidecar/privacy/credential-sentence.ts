import { SECRET, TEXT } from "./words.ts";

// A credential named in a sentence rather than as a key ("the password is swordfish", "pin for the door was 4711",
// "token set to mango"): the word that follows the credential's noun, past a few linking words, is its value and
// leaves as <secret> whatever it is, an English word too. Kept only when it is known to say what happened to the
// credential rather than what it is ("password is incorrect", "token expired"). Deny by default, like the rest.

/** Nouns whose value may follow in the sentence. ("key" is not one: "duplicate key value" is a database's phrase.) */
const NOUNS = new Set("password passwords passwd passphrase passcode pwd pw secret pin otp apikey credential credentials token".split(" "));

/** Words between the noun and its value: kept, and the value is still to come. */
const LINKING = new Set(
  `is was are were be been being has had have will should must set to now still of for the a an my your our their
  this that new old changed reset updated as it user users account accounts client service database`.split(/\s+/),
);

/** What may follow in place of a value: the credential's state, not its value. Kept, and the sentence goes on. */
const VERDICTS = new Set(
  `incorrect invalid wrong expired expires expiring expiry missing required empty too not no correct valid weak
  strong short long ok accepted rejected revoked rotated rotation present absent unset hidden redacted provided
  mismatch mismatched matched verified unchanged locked failed successful succeeded requested request refresh
  refreshed hash hashed length policy strength store file manager check checks verification validation and or
  but with without from by via in on at`.split(/\s+/),
);

/** How many linking words may stand between the noun and its value. */
export const WINDOW = 6;

/** Whether `lower` may stand after a credential's noun without being its value: a linking word, a verdict, a noun. */
export function carriesOn(lower: string): boolean {
  return LINKING.has(lower) || VERDICTS.has(lower) || NOUNS.has(lower);
}

/** Whether `lower` names a credential whose value may follow in the sentence. */
export function isCredentialNoun(lower: string): boolean {
  return NOUNS.has(lower);
}

/**
 * The next word of free text, given how many words may still stand before a credential's value (`window`, 0 when
 * no noun came): the word as it leaves (`kept`, or <secret>) and the new window. A word the vocabulary does not know
 * (a name: "password for alice is x") is hidden as well and the value may still follow; a known word is the value.
 */
export function credentialWindow(lower: string, kept: string, window: number): { out: string; window: number } {
  if (window > 0 && !carriesOn(lower)) return { out: SECRET, window: kept === TEXT ? window - 1 : 0 };
  return { out: kept, window: NOUNS.has(lower) ? WINDOW : window > 0 && LINKING.has(lower) ? window - 1 : 0 };
}
