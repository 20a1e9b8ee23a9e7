import type { KeyObject } from "node:crypto";
import { decodeJwt, errors, jwtVerify } from "jose";
import { LicenseClaims, TOKEN_ISSUER } from "../../protocol/license.ts";

export type TokenCheck = { ok: true; claims: LicenseClaims } | { ok: false; reason: string };

/** Checks a license token: signature (when a vendor key is given), issuer, expiry. Never throws. */
export async function checkLicenseToken(token: string, vendorKey: KeyObject | undefined, now: Date): Promise<TokenCheck> {
  try {
    const payload = vendorKey
      ? (await jwtVerify(token, vendorKey, { issuer: TOKEN_ISSUER, algorithms: ["ES256"], currentDate: now })).payload
      : decodeJwt(token);
    const claims = LicenseClaims.parse(payload);
    if (claims.exp * 1000 <= now.getTime()) return { ok: false, reason: "expired" };
    return { ok: true, claims };
  } catch (err) {
    return {
      ok: false,
      reason:
        err instanceof errors.JWTExpired
          ? "expired"
          : err instanceof errors.JWSSignatureVerificationFailed
            ? "signature does not verify with the vendor key"
            : "not a valid license token",
    };
  }
}
