import type { HttpRequest } from "../http/exchange.ts";
import { INSTANCE_ID_HEADER, INSTANCE_ID_PATTERN, parseUserAgent } from "../protocol/instance.ts";
import type { InstanceStore } from "./instances.ts";

/**
 * How often one instance's sighting is written at most: last seen is this coarse, which an `admin.silentAfter` of
 * hours does not notice, and a sidecar sending batches all day costs one upsert a minute, not one per batch.
 */
export const RECORD_INTERVAL_MS = 60_000;
/** Sightings remembered for the throttle; past this the memory starts over (each instance is then written once more). */
const MAX_REMEMBERED = 100_000;

/**
 * Records the instance an authenticated beacon request comes from (its `X-Egress-Instance-Id` and User-Agent),
 * at most once per RECORD_INTERVAL_MS per license, instance, version and mode: an upgrade shows at once. A request
 * without the header (an older sidecar) or with one that is not a UUID is served as ever and recorded nowhere; a
 * failed write is logged, never the request's failure.
 */
export class InstanceRecorder {
  readonly #store: InstanceStore;
  readonly #now: () => Date;
  readonly #intervalMs: number;
  /** When each (license, instance, version, mode) was last written, on `now`'s clock. */
  readonly #written = new Map<string, number>();

  constructor(store: InstanceStore, options: { now: () => Date; intervalMs?: number }) {
    this.#store = store;
    this.#now = options.now;
    this.#intervalMs = options.intervalMs ?? RECORD_INTERVAL_MS;
  }

  async seen(request: HttpRequest, licenseId: string): Promise<void> {
    const header = request.headers[INSTANCE_ID_HEADER];
    if (typeof header !== "string" || !INSTANCE_ID_PATTERN.test(header)) return;
    const instanceId = header.toLowerCase();
    const agent = parseUserAgent(request.headers["user-agent"]);
    const version = agent?.version ?? null;
    // A User-Agent that does not say: it reached the beacon, so it runs online.
    const mode = agent?.mode ?? "online";
    const key = `${licenseId}\n${instanceId}\n${version}\n${mode}`;
    const seenAt = this.#now();
    const last = this.#written.get(key);
    if (last !== undefined && seenAt.getTime() - last < this.#intervalMs) return;
    if (this.#written.size >= MAX_REMEMBERED) this.#written.clear();
    this.#written.set(key, seenAt.getTime()); // before the write: concurrent requests do not all write
    try {
      await this.#store.recordInstance({ licenseId, instanceId, version, mode, seenAt });
    } catch (err) {
      this.#written.delete(key);
      request.log.warn({ err, licenseId, instanceId }, "instance sighting not recorded");
    }
  }
}
