import { Command, Option } from "commander";
import { AuditListing, AuditQuery, type AuditEntry } from "../../protocol/audit.ts";
import { AuditLog } from "../audit.ts";
import { parseSince } from "./since.ts";
import { table } from "../../cli-table.ts";
import { getLocal, localUrl, withLocalUrlOptions } from "./local-api-client.ts";

function queryString(query: AuditQuery): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  return params.toString();
}

/** Every entry matching, page by page: from the running sidecar, or read-only from a data dir. */
async function* entries(
  options: { url?: string; config?: string; dataDir?: string },
  query: Omit<AuditQuery, "after" | "limit">,
): AsyncGenerator<AuditEntry> {
  const log = options.dataDir ? new AuditLog(options.dataDir, { readonly: true }) : undefined;
  const url = log ? "" : localUrl(options);
  try {
    let after = 0;
    for (;;) {
      const page: AuditQuery = { ...query, after, limit: 1000 };
      const listing = log ? log.list(page) : await getLocal(url, `/v1/audit?${queryString(page)}`, AuditListing);
      yield* listing.entries;
      if (!listing.truncated || listing.entries.length === 0) return;
      after = listing.entries.at(-1)!.id;
    }
  } finally {
    log?.close();
  }
}

async function audit(options: {
  url?: string;
  config?: string;
  dataDir?: string;
  since?: string;
  stream?: string;
  json?: boolean;
}): Promise<void> {
  const query = {
    since: options.since === undefined ? undefined : new Date(parseSince(options.since)).toISOString(),
    stream: options.stream as AuditQuery["stream"],
  };
  const rows = [["TIME", "STREAM", "DESTINATION", "RECORDS", "BYTES", "STATUS", "SHA-256"]];
  for await (const entry of entries(options, query)) {
    if (options.json) {
      process.stdout.write(`${JSON.stringify(entry)}\n`);
      continue;
    }
    rows.push([
      entry.at,
      entry.stream,
      entry.destination,
      String(entry.records),
      String(entry.bytes),
      entry.status === null ? (entry.error ?? "no answer") : String(entry.status),
      entry.sha256,
    ]);
  }
  if (!options.json) process.stdout.write(`${table(rows)}\n`);
}

export function auditCommand(): Command {
  return withLocalUrlOptions(
    new Command("audit").description(
      "what the sidecar sent to the beacon: time, destination, stream, records, bytes, status, SHA-256 of the body",
    ),
  )
    .option("--since <date>", "entries at or after this date (YYYY-MM-DD or ISO 8601)")
    .addOption(new Option("--stream <stream>", "only this stream").choices(AuditQuery.shape.stream.unwrap().options))
    .option("--data-dir <dir>", "read the audit log from this data dir instead (the sidecar need not run)")
    .option("--json", "one JSON object per line (with the kept body, when audit.keepBodies is on)")
    .action(audit);
}
