import { ConfigError } from "../../errors.ts";
import { normaliseTimestamp } from "../../protocol/timestamp.ts";

/**
 * `--since`: a date (its midnight UTC) or a timestamp as every intake takes one (RFC 3339 with an offset), as
 * milliseconds. Not Date.parse: it reads a time without an offset in the machine's zone and rolls February 30 over.
 */
export function parseSince(text: string): number {
  const parsed = normaliseTimestamp(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text);
  if (!parsed.ok) {
    throw new ConfigError("--since", [
      `--since: must be a date (YYYY-MM-DD) or an RFC 3339 timestamp with an offset (2026-11-01T10:00:00Z); this one ${parsed.problem}`,
    ]);
  }
  return Date.parse(parsed.value);
}
