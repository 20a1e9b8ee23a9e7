import { createWriteStream } from "node:fs";
import { ExportHeader } from "../../protocol/instance.ts";
import type { TraceTransaction } from "../../protocol/trace-transaction.ts";
import { EGRESS_VERSION } from "../../version.ts";
import { type AgentConfig, loadAgentConfig } from "../config.ts";
import { offlineLicenseId } from "../license/offline-license.ts";
import { cachedLicenseId } from "../license/online-license.ts";
import { sentAttempts } from "../shippers/billing.ts";
import { readInstanceId } from "../storage/instance-id.ts";
import { bodyText, Outbox } from "../storage/outbox.ts";
import { parseSince } from "./since.ts";

/**
 * The export file's first line: who wrote it (instance, license, version, mode) and when, so the beacon can charge
 * it to the license and count the instance (docs/PROTOCOL.md, "The export file"). What is not known is null, said
 * on stderr: the file is still written, the vendor then asks whose it is.
 */
export async function exportHeader(config: AgentConfig, outbox: Outbox, since: number, now: Date): Promise<ExportHeader> {
  const mode = config.offline.enabled ? "offline" : "online";
  let licenseId: string | null;
  let problem: string | null = null;
  if (config.offline.enabled) ({ licenseId, problem } = await offlineLicenseId({ ...config.offline, now }));
  else {
    licenseId = cachedLicenseId(outbox);
    if (licenseId === null) problem = "the sidecar has never verified its license with the beacon";
  }
  if (problem) process.stderr.write(`export: license_id is null in the file's first line: ${problem}\n`);
  const instanceId = readInstanceId(config.dataDir);
  if (instanceId === null) {
    process.stderr.write("export: instance_id is null in the file's first line: no sidecar of this version has started on this data dir\n");
  }
  return ExportHeader.parse({
    egress_export: 1,
    instance_id: instanceId,
    license_id: licenseId,
    egress_version: EGRESS_VERSION,
    mode,
    exported_at: now.toISOString(),
    since: new Date(since).toISOString(),
  });
}

/**
 * Writes the header line, then billing records whose interval starts at or after --since as JSON lines: the
 * offline true-up. Read-only on the data dir: it may run beside a running sidecar.
 */
export async function exportRecords(options: { config?: string; since: string; output?: string }): Promise<void> {
  const since = parseSince(options.since);
  const config = loadAgentConfig({ file: options.config, env: process.env });
  const outbox = new Outbox(config.dataDir, { readonly: true });
  let out: NodeJS.WritableStream | undefined;
  let written = 0;
  try {
    const header = await exportHeader(config, outbox, since, new Date());
    out = options.output ? createWriteStream(options.output, { mode: 0o600 }) : process.stdout;
    const write = async (line: string) => {
      if (!out!.write(line)) await new Promise<void>((resolve) => out!.once("drain", () => resolve()));
    };
    await write(`${JSON.stringify(header)}\n`);
    for (const record of outbox.history.records("billing")) {
      const transaction = { ...(JSON.parse(bodyText(record)) as TraceTransaction), num_failed_send_attempts: sentAttempts(record) };
      if (Date.parse(transaction.start_interval_time) < since) continue;
      await write(`${JSON.stringify(transaction)}\n`);
      written++;
      if (process.stderr.isTTY && written % 10_000 === 0) process.stderr.write(`\rexported ${written} records`);
    }
  } finally {
    outbox.close();
  }
  if (out && out !== process.stdout) {
    const file = out;
    await new Promise<void>((resolve, reject) => {
      file.once("error", reject);
      file.end(() => resolve());
    });
  }
  process.stderr.write(`${process.stderr.isTTY ? "\r" : ""}exported ${written} billing records\n`);
}
