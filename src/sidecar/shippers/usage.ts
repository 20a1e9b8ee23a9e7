import { beaconPaths } from "../../protocol/beacon-paths.ts";
import type { UsageSnapshot } from "../../protocol/usage-snapshot.ts";
import { beaconAnswers } from "../egress/answer-rules.ts";
import { bodyText, type OutboxRecord } from "../storage/outbox.ts";
import type { StoredSnapshot } from "../usage/snapshotter.ts";
import type { StreamPolicy } from "./shipper.ts";

/** Usage: one snapshot per request to /v1/beacon/usage-snapshot; the beacon keeps one per window, so re-sends are safe. */
export function usagePolicy(licenseKey: string): StreamPolicy {
  return {
    stream: "usage",
    path: beaconPaths.usageSnapshot,
    batchSize: 1,
    keepDelivered: true,
    answer: beaconAnswers.usage,
    buildPayload(records: readonly OutboxRecord[]): string {
      const snapshot: UsageSnapshot = { license_key: licenseKey, ...(JSON.parse(bodyText(records[0]!)) as StoredSnapshot) };
      return JSON.stringify(snapshot);
    },
  };
}
