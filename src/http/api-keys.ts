import { createHash, timingSafeEqual } from "node:crypto";
import * as z from "zod";
import { HttpError } from "../errors.ts";
import type { HttpRequest } from "../http/exchange.ts";

const sha256 = (value: string) => createHash("sha256").update(value).digest();

/** An accepted key as a config gives it: the key itself, or `sha256:` and the lower-case hex of it (hashed at rest). */
export const ApiKeyEntry = z.string().refine((key) => (key.startsWith("sha256:") ? /^sha256:[0-9a-f]{64}$/.test(key) : key.length >= 16), {
  message: "must be a key of at least 16 characters, or sha256:<lower-case hex of the key> (hashed at rest)",
});

/** Who used a key, for an audit record: the first 8 hex digits of its SHA-256, which tell keys apart and give none away. */
export const keyFingerprint = (digest: Buffer): string => `key:${digest.subarray(0, 4).toString("hex")}`;

/** `Authorization: Bearer <key>`: the scheme in any case, then the key (RFC 6750's form). */
const BEARER = /^bearer[ \t]+(\S(?:.*\S)?)$/is;

/** The key a request presents: X-Api-Key, or the token of `Authorization: Bearer`, which must agree when both come. */
function presentedKey(request: HttpRequest): string {
  const header = request.headers["x-api-key"];
  const apiKey = (Array.isArray(header) ? header[0] : header) || undefined;
  const authorization = request.headers.authorization;
  if (authorization === undefined || authorization === "") {
    if (apiKey === undefined) throw new HttpError("EGRESS_ERR_API_KEY_MISSING", "missing X-Api-Key (or Authorization: Bearer) header");
    return apiKey;
  }
  // Another scheme (Basic, a token of some other service) is refused, never passed over for X-Api-Key.
  const bearer = BEARER.exec(authorization)?.[1];
  if (bearer === undefined) throw new HttpError("EGRESS_ERR_API_KEY_INVALID", "the Authorization header must be `Bearer <API key>`");
  // Two keys that differ name two callers: neither is chosen. Compared as digests, in constant time.
  if (apiKey !== undefined && !timingSafeEqual(sha256(apiKey), sha256(bearer)))
    throw new HttpError("EGRESS_ERR_API_KEY_CONFLICT", "X-Api-Key and Authorization: Bearer carry different keys; send one");
  return bearer;
}

/**
 * The API key check of every control plane route but the setup callback: `X-Api-Key`, or `Authorization: Bearer`
 * (the OpenAPI lists both), read from the headers before any body. Keys are held as SHA-256 digests only (a config
 * entry may already be one: `sha256:<hex>`), compared in constant time; no message carries a key.
 */
export class ApiKeys {
  readonly #digests: Buffer[];

  /** `keys` as the config checked them (a key, or `sha256:` and 64 lower-case hex digits). */
  constructor(keys: readonly string[]) {
    this.#digests = keys.map((key) => (/^sha256:[0-9a-f]{64}$/.test(key) ? Buffer.from(key.slice(7), "hex") : sha256(key)));
  }

  get size(): number {
    return this.#digests.length;
  }

  /** Throws 401 unless the request carries an accepted key (X-Api-Key or Bearer; both must then agree). */
  check(request: HttpRequest): true {
    this.identify(request);
    return true;
  }

  /** As check, and which key it was: its fingerprint (keyFingerprint), never the key. */
  identify(request: HttpRequest): string {
    return this.identifyKey(presentedKey(request));
  }

  /** As identify, for a key that came some other way (the console's sign-in form). */
  identifyKey(key: string): string {
    const digest = sha256(key);
    // Every stored digest is compared: the time taken does not tell which one matched.
    let accepted = false;
    for (const known of this.#digests) accepted = timingSafeEqual(known, digest) || accepted;
    if (!accepted) throw new HttpError("EGRESS_ERR_API_KEY_INVALID", "the API key is not valid");
    return keyFingerprint(digest);
  }
}

export function hashApiKey(key: string): string {
  return `sha256:${sha256(key).toString("hex")}`;
}
