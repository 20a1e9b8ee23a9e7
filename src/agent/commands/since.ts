import { ConfigError } from "../../errors.ts";

/** `--since`: a date (its midnight UTC) or an ISO 8601 timestamp, as milliseconds. */
export function parseSince(text: string): number {
  const ms = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text);
  if (Number.isNaN(ms)) throw new ConfigError("--since", ["--since: must be a date (YYYY-MM-DD) or an ISO 8601 timestamp"]);
  return ms;
}
