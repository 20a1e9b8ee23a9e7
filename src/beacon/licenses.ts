import { createHash } from "node:crypto";
import type { BeaconLicenseConfig } from "./config.ts";

/** A license as the beacon knows it. The key itself is never kept: only its SHA-256. */
export interface License {
  id: string;
  organizationId: string;
  expiresAt: Date;
  seats: number;
}

export function hashLicenseKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** The licenses a beacon accepts, looked up by the hash of the key an instance sends. */
export class LicenseRegistry {
  readonly #byKeyHash = new Map<string, License>();
  readonly #byId = new Map<string, License>();

  constructor(entries: readonly BeaconLicenseConfig[]) {
    for (const entry of entries) {
      const license: License = {
        id: entry.id,
        organizationId: entry.organizationId,
        expiresAt: new Date(entry.expiresAt),
        seats: entry.seats,
      };
      // One key per license: the config refuses a shared one (config.ts), naming both entries.
      this.#byKeyHash.set(entry.keySha256 ?? hashLicenseKey(entry.key!), license);
      this.#byId.set(license.id, license);
    }
  }

  findByKey(key: string): License | undefined {
    return this.#byKeyHash.get(hashLicenseKey(key));
  }

  findById(id: string): License | undefined {
    return this.#byId.get(id);
  }
}
