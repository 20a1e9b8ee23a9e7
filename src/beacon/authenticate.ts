import type { Clock } from "../clock.ts";
import { HttpError } from "../errors.ts";
import type { HttpRequest } from "../http/exchange.ts";
import type { License, LicenseLookup } from "./licenses.ts";
import type { TokenIssuer } from "./token-issuer.ts";

function refuseRevoked(license: License): void {
  if (license.revokedAt)
    throw new HttpError("EGRESS_ERR_LICENSE_REVOKED", `license ${license.id} was revoked at ${license.revokedAt.toISOString()}`);
}

/** Who sent a request: the license in the body and, when present, the bearer token issued for it. */
export class Authenticator {
  readonly #licenses: LicenseLookup;
  readonly #tokens: TokenIssuer;
  readonly #now: Clock;

  constructor(licenses: LicenseLookup, tokens: TokenIssuer, now: Clock) {
    this.#licenses = licenses;
    this.#tokens = tokens;
    this.#now = now;
  }

  /** The license for a key; unknown or revoked is 403, and so is expired when `requireUnexpired` (verification). */
  license(key: string, { requireUnexpired }: { requireUnexpired: boolean }): License {
    const license = this.#licenses.findByKey(key);
    if (!license) throw new HttpError("EGRESS_ERR_LICENSE_UNKNOWN", "the license key is not known to this beacon");
    refuseRevoked(license);
    if (requireUnexpired && license.expiresAt.getTime() <= this.#now()) {
      throw new HttpError("EGRESS_ERR_LICENSE_EXPIRED", `license ${license.id} expired at ${license.expiresAt.toISOString()}`);
    }
    return license;
  }

  /** The license named by a valid `Authorization: Bearer` token, or undefined when the header is absent. */
  async bearer(request: HttpRequest): Promise<License | undefined> {
    const header = request.headers.authorization;
    if (header === undefined) return undefined;
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match) throw new HttpError("EGRESS_ERR_TOKEN_INVALID", "Authorization must be 'Bearer <token>'");
    const claims = await this.#tokens.verify(match[1]!);
    if (claims.offline) {
      throw new HttpError(
        "EGRESS_ERR_TOKEN_OFFLINE",
        "an offline license is checked by an air-gapped sidecar itself, never sent as a bearer token; verify the license key online for one",
      );
    }
    const license = this.#licenses.findById(claims.sub);
    if (!license) throw new HttpError("EGRESS_ERR_TOKEN_INVALID", "the bearer token names a license this beacon no longer has");
    refuseRevoked(license);
    // A token had with a key since replaced is refused: by the key's tag it carries, or (a token from before tags)
    // by its age: one issued before the key was replaced may have come with the old key. Verify again with the new one.
    const stale =
      claims.kt !== undefined
        ? claims.kt !== license.keyTag
        : license.keyRotatedAt !== undefined && claims.iat < Math.floor(license.keyRotatedAt.getTime() / 1000);
    if (stale)
      throw new HttpError(
        "EGRESS_ERR_TOKEN_INVALID",
        "the bearer token was issued before the license's key was replaced; verify the license again",
      );
    return license;
  }

  /** The body's license, cross-checked against the bearer token's (checked before the body was read), when one was sent. */
  licenseAndBearer(key: string, tokenLicense: License | undefined): License {
    const license = this.license(key, { requireUnexpired: false });
    if (tokenLicense && tokenLicense.id !== license.id) {
      throw new HttpError("EGRESS_ERR_TOKEN_MISMATCH", "the bearer token was issued for a different license");
    }
    return license;
  }
}
