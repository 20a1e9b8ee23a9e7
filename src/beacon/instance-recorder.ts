import type { Clock } from "../clock.ts";
import type { HttpRequest } from "../http/exchange.ts";
import { INSTANCE_ID_HEADER, INSTANCE_ID_PATTERN, parseUserAgent } from "../protocol/instance.ts";
import { type InstanceStore, newInstancesPerHour } from "./instances.ts";

/**
 * How often one instance's sighting is written at most: last seen is this coarse, which an `admin.silentAfter` of
 * hours does not notice, and a sidecar sending batches all day costs one upsert a minute, not one per batch.
 */
export const RECORD_INTERVAL_MS = 60_000;
/** Sightings remembered for the throttle; past this the memory starts over (each instance is then written once more). */
const MAX_REMEMBERED = 100_000;
/** The window of the new-instance cap (`newInstancesPerHour`). */
const CAP_WINDOW_MS = 3_600_000;
/** A license whose new instances are refused is logged at most this often: a flood is one line a minute. */
const REFUSAL_LOG_INTERVAL_MS = 60_000;

/**
 * Records the instance an authenticated beacon request comes from (its `X-Egress-Instance-Id` and User-Agent),
 * at most once per RECORD_INTERVAL_MS per license, instance, version and mode: an upgrade shows at once. A request
 * without the header (an older sidecar) or with one that is not a UUID is served as ever and recorded nowhere; a
 * failed write is logged, never the request's failure. A license may add at most `newInstancesPerHour(seats)` new
 * instances an hour (counted in the database, so across replicas): past that a new id is not stored, and the
 * refusal counted (`onRefused`, the beacon's metric) and logged once a minute per license; known instances are
 * always updated. Without this any license holder could fill the table with made-up ids.
 */
export class InstanceRecorder {
  readonly #store: InstanceStore;
  readonly #now: Clock;
  readonly #intervalMs: number;
  /** When each (license, instance, version, mode) was last written, on `now`'s clock. */
  readonly #written = new Map<string, number>();
  readonly #onRefused: () => void;
  /** Per license: when a refusal was last logged, and how many since. */
  readonly #refusals = new Map<string, { loggedAt: number; count: number }>();

  constructor(store: InstanceStore, options: { now: Clock; intervalMs?: number; onRefused?: () => void }) {
    this.#store = store;
    this.#now = options.now;
    this.#intervalMs = options.intervalMs ?? RECORD_INTERVAL_MS;
    this.#onRefused = options.onRefused ?? (() => {});
  }

  async seen(request: HttpRequest, license: { id: string; seats: number }): Promise<void> {
    const licenseId = license.id;
    const header = request.headers[INSTANCE_ID_HEADER];
    if (typeof header !== "string" || !INSTANCE_ID_PATTERN.test(header)) return;
    const instanceId = header.toLowerCase();
    const agent = parseUserAgent(request.headers["user-agent"]);
    const version = agent?.version ?? null;
    // A User-Agent that does not say: it reached the beacon, so it runs online.
    const mode = agent?.mode ?? "online";
    const key = `${licenseId}\n${instanceId}\n${version}\n${mode}`;
    const now = this.#now();
    const last = this.#written.get(key);
    if (last !== undefined && now - last < this.#intervalMs) return;
    if (this.#written.size >= MAX_REMEMBERED) this.#written.clear();
    // Before the write: concurrent requests do not all write; a refused id is not tried again for the interval either.
    this.#written.set(key, now);
    try {
      const cap = { max: newInstancesPerHour(license.seats), since: new Date(now - CAP_WINDOW_MS) };
      if (!(await this.#store.recordInstance({ licenseId, instanceId, version, mode, seenAt: new Date(now) }, cap))) {
        this.#refused(request, licenseId, cap.max, now);
      }
    } catch (err) {
      this.#written.delete(key);
      request.log.warn({ err, licenseId, instanceId }, "instance sighting not recorded");
    }
  }

  #refused(request: HttpRequest, licenseId: string, max: number, now: number): void {
    this.#onRefused();
    const refusals = this.#refusals.get(licenseId) ?? { loggedAt: Number.NEGATIVE_INFINITY, count: 0 };
    refusals.count++;
    if (now - refusals.loggedAt >= REFUSAL_LOG_INTERVAL_MS) {
      request.log.warn(
        { licenseId, refused: refusals.count, newInstancesPerHour: max },
        "new instances of this license past its hourly cap are not recorded",
      );
      refusals.loggedAt = now;
      refusals.count = 0;
    }
    if (this.#refusals.size >= MAX_REMEMBERED) this.#refusals.clear();
    this.#refusals.set(licenseId, refusals);
  }
}
