/** Query parameters that carry credentials (`?password=`, `?sslpassword=`, `?api_key=`, `?token=`, `?X-Amz-Signature=`). */
const SECRET_PARAM = /pass|pwd|secret|token|key|auth|credential|signature|sig$/i;

/**
 * A URL as it may be shown: any user name and password, and the values of query parameters that carry
 * credentials, replaced; the rest kept so an operator can check it.
 */
export function redactUrl(url: string): string {
  if (!URL.canParse(url)) return url ? "[REDACTED]" : url;
  const parsed = new URL(url);
  const secretParams = [...parsed.searchParams.keys()].filter((name) => SECRET_PARAM.test(name));
  if (!parsed.username && !parsed.password && secretParams.length === 0) return url;
  if (parsed.username || parsed.password) {
    parsed.username = "REDACTED";
    parsed.password = "";
  }
  for (const name of new Set(secretParams)) parsed.searchParams.set(name, "REDACTED");
  return parsed.toString();
}

/** Terminal escape sequences whole (CSI `ESC [ ... m`, OSC `ESC ] ... BEL`, two-character ones): their parameters too. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching terminal escapes is this pattern's job
const ESCAPE_SEQUENCE = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-Z\\-_])/g;
/** Control and format characters (bells, carriage returns, bidi overrides): never sent to an operator's terminal. */
const UNPRINTABLE = /[\p{Cc}\p{Cf}]/gu;
/** A JSON Web Token (a license token, say): header and payload are base64url JSON, so they start `eyJ`. */
const JWT = /eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;
const MAX_SHOWN = 1000;

/** `text` without control and format characters: what a terminal shows as it is. */
export const printable = (text: string): string => text.replace(ESCAPE_SEQUENCE, "").replace(UNPRINTABLE, "");

/** How text may hold each of `secrets`: as is, and JSON-escaped (inside a body or a log line). */
export function secretForms(secrets: readonly string[]): string[] {
  return [...new Set(secrets.filter(Boolean).flatMap((secret) => [secret, JSON.stringify(secret).slice(1, -1)]))];
}

/**
 * A message as status may show it: the net under the rule that errors never quote a secret or a server's text.
 * Unprintable characters go first (so none can split a secret past the next step), then each secret, as is and
 * JSON-escaped (as it appears inside a body), and anything shaped like a JWT; the rest is cut at 1000 characters.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let shown = printable(text);
  for (const form of new Set(secretForms(secrets).map(printable))) if (form) shown = shown.replaceAll(form, "[REDACTED]");
  shown = shown.replace(JWT, "[REDACTED]");
  return shown.length > MAX_SHOWN ? `${shown.slice(0, MAX_SHOWN)}...` : shown;
}
