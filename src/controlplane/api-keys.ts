import { createHash, timingSafeEqual } from "node:crypto";
import { HttpError } from "../errors.ts";
import type { HttpRequest } from "../http/exchange.ts";

const sha256 = (value: string) => createHash("sha256").update(value).digest();

/**
 * The X-Api-Key check of every control plane route but the setup callback. Keys are held as SHA-256 digests only
 * (a config entry may already be one: `sha256:<hex>`), compared in constant time.
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

  /** Throws 401 unless the request carries an accepted X-Api-Key. */
  check(request: HttpRequest): true {
    const header = request.headers["x-api-key"];
    const key = Array.isArray(header) ? header[0] : header;
    if (!key) throw new HttpError("EGRESS_ERR_API_KEY_MISSING", "missing X-Api-Key header");
    const digest = sha256(key);
    // Every stored digest is compared: the time taken does not tell which one matched.
    let accepted = false;
    for (const known of this.#digests) accepted = timingSafeEqual(known, digest) || accepted;
    if (!accepted) throw new HttpError("EGRESS_ERR_API_KEY_INVALID", "the X-Api-Key is not valid");
    return true;
  }
}

export function hashApiKey(key: string): string {
  return `sha256:${sha256(key).toString("hex")}`;
}
