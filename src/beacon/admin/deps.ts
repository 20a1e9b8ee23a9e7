import type { Clock } from "../../clock.ts";
import type { ApiKeys } from "../../http/api-keys.ts";
import type { HttpRequest } from "../../http/exchange.ts";
import type { BeaconConfig } from "../config.ts";
import type { LicenseCache } from "../license-cache.ts";
import type { BeaconStorage } from "../storage.ts";

/**
 * The instances a license's sidecars reported (src/beacon/instances.ts plugs in here): how many per license for
 * the list, and one license's for its page. Without one, every license has none.
 */
export interface InstanceDirectory {
  countsByLicense(): Promise<ReadonlyMap<string, number>>;
  forLicense(licenseId: string): Promise<Record<string, unknown>[]>;
}

/** Who called an admin route: checked from the headers before any body, remembered for the audit record. */
export class AdminAuth {
  readonly #keys: ApiKeys;
  readonly #actors = new WeakMap<HttpRequest, string>();

  constructor(keys: ApiKeys) {
    this.#keys = keys;
  }

  /** Every admin route's `authorize`: 401 without an admin key, and the body is never read. */
  readonly authorize = (request: HttpRequest): true => {
    this.#actors.set(request, this.#keys.identify(request));
    return true;
  };

  /** The fingerprint of a key typed into the console's sign-in form; throws 401 when it is not an admin key. */
  identifyKey(key: string): string {
    return this.#keys.identifyKey(key);
  }

  /** The admin key's fingerprint (`key:` and 8 hex digits of its SHA-256), never the key. */
  actor(request: HttpRequest): string {
    return this.#actors.get(request) ?? "unknown";
  }
}

/** What every admin route may use; registerAdminRoutes (routes.ts) takes it, and so do the routes others add. */
export interface AdminDeps {
  config: BeaconConfig;
  store: BeaconStorage;
  /** The licenses in force: refreshed at once after a change made here (other replicas within a second). */
  licenses: LicenseCache;
  auth: AdminAuth;
  now: Clock;
  instances?: InstanceDirectory | undefined;
}
