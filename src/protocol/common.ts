import * as z from "zod";

/** An ISO 8601 timestamp in UTC (`Z`), as the trace transaction's fields require (docs/PROTOCOL.md). */
export const UtcTimestamp = z.iso.datetime({ message: "must be an ISO 8601 UTC timestamp, e.g. 2026-01-31T12:00:00Z" });

/** An ISO 8601 timestamp that carries a UTC offset (`Z` or `+hh:mm`), as the usage snapshot uses. */
export const OffsetTimestamp = z.iso.datetime({
  offset: true,
  message: "must be an ISO 8601 timestamp with a UTC offset, e.g. 2026-01-31T12:00:00+00:00",
});

export const Uuid = z.uuid({ message: "must be a UUID" });
/** A UUID in its canonical, lower-case form: one id however the sender cased it (dedup compares text). */
export const CanonicalUuid = Uuid.toLowerCase();

export const Count = z.int({ message: "must be an integer" }).nonnegative({ message: "must not be negative" });

/** A plain object (not null, not an array): what a parsed JSON or YAML document is expected to be at its top. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
