import { createPublicKey, type KeyObject } from "node:crypto";
import { readKeyedFile } from "../../config/load.ts";
import { ConfigError } from "../../errors.ts";

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
