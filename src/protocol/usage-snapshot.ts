import * as z from "zod";
import { Count, LicenseKey, Timestamp } from "./common.ts";
import { compareTimestamps } from "./timestamp.ts";

/**
 * The twelve aggregate counts (docs/PROTOCOL.md). Strict: an unknown key is refused, so no identifier can ride along.
 * Stored as JSON text on both engines, so any safe integer (the bound of `Count`) is kept exactly.
 */
export const UsageMeasures = z.strictObject({
  workspaces: Count,
  users: Count,
  projects: Count,
  experiments: Count,
  datasets: Count,
  evaluators: Count,
  run_rules: Count,
  annotation_queues: Count,
  prompts: Count,
  prompt_commits: Count,
  prompt_pulls: Count,
  active_pats_30d: Count,
});
export type UsageMeasures = z.infer<typeof UsageMeasures>;

/** POST /v1/beacon/usage-snapshot request; its range parsed to canonical UTC text, the beacon's key for a window. */
export const UsageSnapshot = z
  .object({
    license_key: LicenseKey,
    from_timestamp: Timestamp,
    to_timestamp: Timestamp,
    measures: UsageMeasures,
  })
  .superRefine((s, ctx) => {
    if (compareTimestamps(s.to_timestamp, s.from_timestamp) <= 0) {
      ctx.addIssue({ code: "custom", path: ["to_timestamp"], message: "must be after from_timestamp" });
    }
  });
export type UsageSnapshot = z.infer<typeof UsageSnapshot>;

/** POST /v1/beacon/usage-snapshot response: 1 when this window was newly stored, 0 for a repeat. */
export const UsageSnapshotResponse = z.object({ inserted_count: z.union([z.literal(0), z.literal(1)]) });
export type UsageSnapshotResponse = z.infer<typeof UsageSnapshotResponse>;
