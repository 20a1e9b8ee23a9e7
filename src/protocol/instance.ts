import * as z from "zod";
import { Timestamp } from "./common.ts";
import { LicenseId } from "./license.ts";

/**
 * A sidecar's identity on every beacon request (docs/PROTOCOL.md, "Instance identity"): a random UUID made at its
 * first start and kept in its data dir, and its version and mode in the User-Agent.
 */
export const INSTANCE_ID_HEADER = "x-egress-instance-id";

/** Any UUID in its dashed text form; the sidecar makes v4, the beacon takes any (it only counts them). */
export const INSTANCE_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type InstanceMode = "online" | "offline";

/** `egress-agent/<version> (<online|offline>)`. */
export function userAgent(version: string, mode: InstanceMode): string {
  return `egress-agent/${version} (${mode})`;
}

/** A version as the beacon keeps it: short, and only characters a version has (semver, with build or pre-release). */
const VERSION_PATTERN = /^[0-9A-Za-z.+-]{1,64}$/;

/** The version and mode of a sidecar's User-Agent, or null for any other (an older sidecar's, a curl's). */
export function parseUserAgent(text: string | undefined): { version: string; mode: InstanceMode } | null {
  const match = /^egress-agent\/(\S+) \((online|offline)\)$/.exec(text ?? "");
  if (!match || !VERSION_PATTERN.test(match[1]!)) return null;
  return { version: match[1]!, mode: match[2] as InstanceMode };
}

/**
 * The first line of a file `egress-agent export` writes; the lines after it are trace transactions, one JSON
 * object each, as `ingest-traces` carries them (docs/PROTOCOL.md, "The export file").
 */
export const ExportHeader = z.strictObject({
  egress_export: z.literal(1),
  /** Null when the data dir has no instance id (no sidecar of a version that makes one has started on it). */
  instance_id: z.string().regex(INSTANCE_ID_PATTERN, { message: "must be a UUID" }).nullable(),
  /** Null when the sidecar does not know its license (offline: no valid license file; online: never verified). */
  license_id: LicenseId.nullable(),
  egress_version: z.string().regex(VERSION_PATTERN, { message: "must be a version" }),
  mode: z.enum(["online", "offline"]),
  exported_at: Timestamp,
  /** The `--since` the records were chosen by. */
  since: Timestamp,
});
export type ExportHeader = z.output<typeof ExportHeader>;
