import { createPublicKey, type KeyObject } from "node:crypto";
import { decodeJwt, jwtVerify } from "jose";
import { readKeyedFile } from "../config/load.ts";
import { ConfigError } from "../errors.ts";
import { TOKEN_ISSUER } from "../protocol/license.ts";
import { LicenseClaims } from "../protocol/license.ts";

/** Reads the vendor's public key: SPKI PEM, a JWK, or a JWKS with one key (what /v1/beacon/jwks.json serves). */
export function readVendorPublicKey(path: string, key = "offline.publicKeyFile"): KeyObject {
  const text = readKeyedFile(key, path);
  try {
    if (!text.trimStart().startsWith("{")) return createPublicKey(text);
    const json = JSON.parse(text) as { keys?: object[] };
    const jwk = json.keys ? json.keys[0] : json;
    return createPublicKey({ key: jwk as never, format: "jwk" });
  } catch {
    throw new ConfigError(key, [`${key}: not a PEM public key, JWK or JWKS`]);
  }
}

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
    const code = (err as { code?: string }).code;
    return { ok: false, reason: code === "ERR_JWT_EXPIRED" ? "expired" : code === "ERR_JWS_SIGNATURE_VERIFICATION_FAILED" ? "signature does not verify with the vendor key" : "not a valid license token" };
  }
}
