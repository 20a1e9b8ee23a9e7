import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { calculateJwkThumbprint, errors, exportJWK, jwtVerify, SignJWT, type JWK } from "jose";
import { readKeyedFile } from "../config/load.ts";
import type { Clock } from "../clock.ts";
import { ConfigError, HttpError } from "../errors.ts";
import { LicenseClaims, TOKEN_ISSUER } from "../protocol/license.ts";
import type { License } from "./licenses.ts";

/** What a token says of its license. */
type TokenLicense = Pick<License, "id" | "organizationId" | "seats" | "expiresAt"> & { keyTag?: string | undefined };

/** Checked tokens kept: a few per sidecar (one live token each, plus one renewed early). */
const VERIFIED_TOKENS_KEPT = 10_000;

/** Reads the signing key (PKCS#8 PEM or a private JWK), or creates one in the data dir on first start. */
function loadSigningKey(dataDir: string, signingKeyFile: string): KeyObject {
  if (signingKeyFile) {
    const text = readKeyedFile("signingKeyFile", signingKeyFile);
    try {
      return text.trimStart().startsWith("{") ? createPrivateKey({ key: JSON.parse(text), format: "jwk" }) : createPrivateKey(text);
    } catch {
      throw new ConfigError("beacon config", ["signingKeyFile: not a PKCS#8 PEM or JWK private key"]);
    }
  }
  const path = join(dataDir, "signing-key.pem");
  try {
    return createPrivateKey(readFileSync(path, "utf8"));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  mkdirSync(dataDir, { recursive: true });
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  // 'wx': two beacons starting on one data dir must not overwrite each other's key.
  writeFileSync(path, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600, flag: "wx" });
  return privateKey;
}

/** Signs and checks the short-lived ES256 license tokens; publishes the public half as a JWKS. */
export class TokenIssuer {
  readonly #privateKey: KeyObject;
  readonly #publicKey: KeyObject;
  readonly #publicJwk: JWK;
  readonly #ttlMs: number;
  readonly #now: Clock;
  /**
   * Tokens whose signature has been checked, with their claims. A sidecar sends the same token with every batch
   * until it renews; checking the signature once keeps each ingest's authentication synchronous, so concurrent
   * batches still reach the shared commit together (an asynchronous check per request spread them over
   * separate commits, one fsync each).
   */
  readonly #verified = new Map<string, LicenseClaims>();

  private constructor(privateKey: KeyObject, publicJwk: JWK, ttlMs: number, now: Clock) {
    this.#privateKey = privateKey;
    this.#publicKey = createPublicKey(privateKey);
    this.#publicJwk = publicJwk;
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  static async open(options: { dataDir: string; signingKeyFile: string; ttlMs: number; now: Clock }): Promise<TokenIssuer> {
    const privateKey = loadSigningKey(options.dataDir, options.signingKeyFile);
    if (privateKey.asymmetricKeyType !== "ec" || privateKey.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
      throw new ConfigError("beacon config", ["signingKeyFile: must be an EC P-256 key (ES256)"]);
    }
    const jwk = await exportJWK(createPublicKey(privateKey));
    const publicJwk: JWK = { ...jwk, kid: await calculateJwkThumbprint(jwk), alg: "ES256", use: "sig" };
    return new TokenIssuer(privateKey, publicJwk, options.ttlMs, options.now);
  }

  /** A token naming the license by id (never by key); it expires after the TTL or with the license. */
  async issue(license: TokenLicense): Promise<string> {
    const now = this.#now();
    const exp = Math.min(now + this.#ttlMs, license.expiresAt.getTime());
    const claims = { org: license.organizationId, seats: license.seats, lexp: Math.floor(license.expiresAt.getTime() / 1000) };
    return new SignJWT(license.keyTag === undefined ? claims : { ...claims, kt: license.keyTag })
      .setProtectedHeader({ alg: "ES256", kid: this.#publicJwk.kid!, typ: "JWT" })
      .setIssuer(TOKEN_ISSUER)
      .setSubject(license.id)
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(Math.floor(exp / 1000))
      .sign(this.#privateKey);
  }

  /** A long-lived license for an air-gapped sidecar, checked there against this beacon's public key. */
  async issueOffline(license: TokenLicense, expiresAt: Date): Promise<string> {
    const exp = Math.min(expiresAt.getTime(), license.expiresAt.getTime());
    return new SignJWT({ org: license.organizationId, seats: license.seats, offline: true })
      .setProtectedHeader({ alg: "ES256", kid: this.#publicJwk.kid!, typ: "JWT" })
      .setIssuer(TOKEN_ISSUER)
      .setSubject(license.id)
      .setIssuedAt(Math.floor(this.#now() / 1000))
      .setExpirationTime(Math.floor(exp / 1000))
      .sign(this.#privateKey);
  }

  /** The public key as SPKI PEM, for a sidecar's offline.publicKeyFile. */
  get publicKeyPem(): string {
    return this.#publicKey.export({ type: "spki", format: "pem" }).toString();
  }

  /** Checks signature, issuer and expiry; a bad token is a 401 that says why without echoing it. */
  async verify(token: string): Promise<LicenseClaims> {
    const known = this.#verified.get(token);
    if (known && known.exp * 1000 > this.#now()) return known;
    this.#verified.delete(token);
    try {
      const { payload } = await jwtVerify(token, this.#publicKey, {
        issuer: TOKEN_ISSUER,
        algorithms: ["ES256"],
        currentDate: new Date(this.#now()),
      });
      const claims = LicenseClaims.parse(payload);
      if (this.#verified.size >= VERIFIED_TOKENS_KEPT) this.#verified.clear();
      this.#verified.set(token, claims);
      return claims;
    } catch (err) {
      const reason = err instanceof errors.JWTExpired ? "expired" : "invalid";
      throw new HttpError("EGRESS_ERR_TOKEN_INVALID", `the bearer token is ${reason}; verify the license again`);
    }
  }

  get jwks(): { keys: JWK[] } {
    return { keys: [this.#publicJwk] };
  }
}
