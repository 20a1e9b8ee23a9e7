import type { BeaconClient } from "../egress/beacon-client.ts";
import type { OfflineLicense } from "../license/offline-license.ts";
import type { OnlineLicense } from "../license/online-license.ts";
import type { Shipper } from "../shippers/shipper.ts";
import type { Stream } from "../storage/outbox.ts";

/** What leaves the sidecar, online or offline: the license it runs on and, online only, the way to the beacon. */
export interface Egress {
  license: OnlineLicense | OfflineLicense;
  /** Undefined offline: no beacon client exists at all. */
  client: BeaconClient | undefined;
  /** The shipper of a stream, to wake when a record is queued; undefined offline or for a stream switched off. */
  shipping(stream: Stream): Shipper | undefined;
  /** Drains the shippers (bounded), then stops the license loop and the client. */
  close(): Promise<void>;
}
