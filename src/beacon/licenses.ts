import { createHash, randomBytes } from "node:crypto";
import type { BeaconLicenseConfig } from "./config.ts";

/** A license as the beacon knows it. The key itself is never kept: only its SHA-256. */
export interface License {
  id: string;
  organizationId: string;
  expiresAt: Date;
  seats: number;
  /** Whether `beacon issue-offline-license` may sign an offline license for it. */
  offlineAllowed: boolean;
  /** Set once revoked: its key and its tokens are refused from then on. */
  revokedAt?: Date | undefined;
  /** When its key was last replaced: a token issued before is refused (it may have come with the old key). */
  keyRotatedAt?: Date | undefined;
  /**
   * Which key is current, without being it: the first 16 hex digits of its SHA-256. Tokens carry it (`kt`), so one
   * had with a key since replaced is refused whenever it was issued (a replica that had not yet seen the change).
   */
  keyTag: string;
}

/** A license as the database keeps it (src/beacon/license-store.ts): times as canonical UTC texts. */
export interface LicenseRecord {
  id: string;
  organizationId: string;
  expiresAt: string;
  seats: number;
  offlineAllowed: boolean;
  keySha256: string;
  revokedAt: string | null;
  keyRotatedAt: string | null;
  createdAt: string;
  updatedAt: string;
  lastVerifiedAt: string | null;
}

/** A key's tag (see License.keyTag). */
export const keyTagOf = (keySha256: string): string => keySha256.slice(0, 16);

export function hashLicenseKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** A new license key: 256 random bits, shown to the vendor once and kept only as its hash. */
export function generateLicenseKey(): string {
  return `lic-${randomBytes(32).toString("base64url")}`;
}

export function licenseOfRecord(record: LicenseRecord): License {
  return {
    id: record.id,
    organizationId: record.organizationId,
    expiresAt: new Date(record.expiresAt),
    seats: record.seats,
    offlineAllowed: record.offlineAllowed,
    revokedAt: record.revokedAt === null ? undefined : new Date(record.revokedAt),
    keyRotatedAt: record.keyRotatedAt === null ? undefined : new Date(record.keyRotatedAt),
    keyTag: keyTagOf(record.keySha256),
  };
}

/** A `licenses:` entry of beacon.yaml as the database keeps it (its key hashed). */
export function configLicenseFields(
  entry: BeaconLicenseConfig,
): Pick<LicenseRecord, "id" | "organizationId" | "expiresAt" | "seats" | "offlineAllowed" | "keySha256"> {
  return {
    id: entry.id,
    organizationId: entry.organizationId,
    expiresAt: entry.expiresAt,
    seats: entry.seats,
    offlineAllowed: entry.offlineAllowed,
    keySha256: entry.keySha256 ?? hashLicenseKey(entry.key!),
  };
}

/** What a license's key and tokens are looked up in: the registry, or the cache that keeps one current. */
export interface LicenseLookup {
  findByKey(key: string): License | undefined;
  findById(id: string): License | undefined;
}

/** The licenses a beacon accepts, looked up by the hash of the key an instance sends. */
export class LicenseRegistry implements LicenseLookup {
  readonly #byKeyHash = new Map<string, License>();
  readonly #byId = new Map<string, License>();

  constructor(records: readonly LicenseRecord[]) {
    for (const record of records) {
      const license = licenseOfRecord(record);
      // One key per license: the config and the database's unique index refuse a shared one.
      this.#byKeyHash.set(record.keySha256, license);
      this.#byId.set(license.id, license);
    }
  }

  /** The registry of a config's `licenses:` alone (commands that run without the database). */
  static ofConfig(entries: readonly BeaconLicenseConfig[]): LicenseRegistry {
    const at = new Date(0).toISOString();
    return new LicenseRegistry(
      entries.map((entry) => ({
        ...configLicenseFields(entry),
        revokedAt: null,
        keyRotatedAt: null,
        createdAt: at,
        updatedAt: at,
        lastVerifiedAt: null,
      })),
    );
  }

  findByKey(key: string): License | undefined {
    return this.#byKeyHash.get(hashLicenseKey(key));
  }

  findById(id: string): License | undefined {
    return this.#byId.get(id);
  }
}

/** A license's state as the admin API shows it. */
export type LicenseState = "active" | "expiring" | "expired" | "revoked";

/** Within this of its expiry a license is `expiring`: a renewal is due. */
export const EXPIRING_WITHIN_MS = 30 * 24 * 3600 * 1000;

export function licenseState(record: Pick<LicenseRecord, "revokedAt" | "expiresAt">, now: number): LicenseState {
  if (record.revokedAt !== null) return "revoked";
  const left = new Date(record.expiresAt).getTime() - now;
  if (left <= 0) return "expired";
  return left < EXPIRING_WITHIN_MS ? "expiring" : "active";
}
