import type { KeyObject } from "node:crypto";
import { decodeJwt } from "jose";
import type { Clock } from "../../clock.ts";
import { readKeyedFile } from "../../config/load.ts";
import { LicenseClaims } from "../../protocol/license.ts";
import type { LicenseStatus } from "../../protocol/local-api.ts";
import { checkLicenseToken } from "./token-check.ts";
import { readVendorPublicKey } from "./vendor-key.ts";

/**
 * Offline (air-gapped) mode: a license the vendor signed once, checked locally against the vendor key.
 * Nothing here touches the network.
 */
export class OfflineLicense {
  readonly #token: string;
  readonly #key: KeyObject;
  readonly #now: Clock;
  #status: LicenseStatus;
  #recheck: NodeJS.Timeout | undefined;

  constructor(options: { licenseFile: string; publicKeyFile: string; now?: Clock }) {
    this.#now = options.now ?? Date.now;
    this.#key = readVendorPublicKey(options.publicKeyFile);
    this.#token = readKeyedFile("offline.licenseFile", options.licenseFile).trim();
    this.#status = {
      mode: "offline",
      state: "unverified",
      licenseId: null,
      organizationId: null,
      expiresAt: null,
      licenseExpiresAt: null,
      verifiedAt: null,
      lastError: null,
    };
  }

  /** Verifies signature, expiry and that the token is an offline license; cheap enough to call per status read. */
  async check(): Promise<LicenseStatus> {
    const result = await checkLicenseToken(this.#token, this.#key, new Date(this.#now()));
    if (result.ok && result.claims.offline) {
      this.#status = {
        ...this.#status,
        state: "valid",
        licenseId: result.claims.sub,
        organizationId: result.claims.org,
        expiresAt: new Date(result.claims.exp * 1000).toISOString(),
        licenseExpiresAt: new Date(result.claims.exp * 1000).toISOString(),
        lastError: null,
      };
    } else {
      this.#status = {
        ...this.#status,
        state: "invalid",
        lastError: result.ok
          ? "not an offline license (issue one with `egress-agent beacon issue-offline-license`)"
          : `offline license ${result.reason}`,
      };
    }
    return this.#status;
  }

  /** Checks now and then every minute, so expiry shows without a restart. */
  async start(): Promise<LicenseStatus> {
    this.#recheck = setInterval(() => void this.check(), 60_000);
    this.#recheck.unref();
    return this.check();
  }

  status(): LicenseStatus {
    return this.#status;
  }

  async stop(): Promise<void> {
    clearInterval(this.#recheck);
  }
}

/**
 * The license id an offline license names, for `export`: also when it has expired (a true-up after the end is
 * still that license's), never when its signature does not verify. Null, with why, when there is none to name.
 */
export async function offlineLicenseId(options: {
  licenseFile: string;
  publicKeyFile: string;
  now: Date;
}): Promise<{ licenseId: string | null; problem: string | null }> {
  try {
    const token = readKeyedFile("offline.licenseFile", options.licenseFile).trim();
    const result = await checkLicenseToken(token, readVendorPublicKey(options.publicKeyFile), options.now);
    // "expired" comes only after the signature verified (jose checks it before the claims).
    if (result.ok || result.reason === "expired") return { licenseId: LicenseClaims.parse(decodeJwt(token)).sub, problem: null };
    return { licenseId: null, problem: `offline license ${result.reason}` };
  } catch (err) {
    return { licenseId: null, problem: (err as Error).message };
  }
}
