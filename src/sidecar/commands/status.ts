import { Command } from "commander";
import { AgentStatus } from "../../protocol/local-api.ts";
import { table } from "../../cli-table.ts";
import { printable } from "../../config/redact.ts";
import { getLocal, localUrl, withLocalUrlOptions } from "./local-api-client.ts";

function age(seconds: number | null): string {
  if (seconds === null) return "-";
  if (seconds < 120) return `${Math.round(seconds)}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)}h`;
  return `${Math.round(seconds / 86_400)}d`;
}

/** The status as a person reads it: the license on top, then a row per stream, then each stream's last error. */
export function formatStatus(status: AgentStatus): string {
  const { license } = status;
  const lines = [
    `license: ${license.state} (${license.mode})` +
      (license.licenseId ? `  id ${license.licenseId}` : "") +
      // Online, the license's own end, then the hour-long token's (which is renewed): not the token's as the license's.
      (license.mode === "online" && license.licenseExpiresAt && license.expiresAt
        ? `  expires ${license.licenseExpiresAt} (token until ${license.expiresAt})`
        : license.expiresAt
          ? `  expires ${license.expiresAt}`
          : "") +
      (license.verifiedAt ? `  verified ${license.verifiedAt}` : ""),
  ];
  if (license.lastError) lines.push(`license error: ${license.lastError}`);
  lines.push("");
  const rows = [["STREAM", "ENABLED", "QUEUED", "SENDING", "OLDEST", "DELIVERED", "DEAD", "LAST SUCCESS", "LAST ERROR"]];
  for (const [name, stream] of Object.entries(status.streams)) {
    rows.push([
      name,
      stream.enabled ? "yes" : "no",
      String(stream.pending),
      String(stream.sending),
      age(stream.oldestPendingAgeSeconds),
      String(stream.delivered),
      String(stream.failed),
      stream.lastSuccessAt ?? "-",
      stream.lastError?.at ?? "-",
    ]);
  }
  const rowsText = table(rows.map((row) => row.map(printable)));
  lines.push(rowsText);
  for (const [name, stream] of Object.entries(status.streams)) {
    if (stream.keptForExport > 0)
      lines.push(
        `${name}: ${stream.keptForExport} records kept for export (offline mode sends nothing; egress-agent export writes them out)`,
      );
    if (stream.lastError) lines.push(`${name}: last error ${stream.lastError.at}: ${stream.lastError.message}`);
    for (const dead of stream.deadLetters)
      lines.push(`${name}: dead letter ${dead.recordId ?? "-"} after ${dead.attempts} failed sends: ${dead.error ?? ""}`);
  }
  // The text came over HTTP from whatever --url names: nothing in it may drive the terminal or start a line.
  return lines.map((line) => (line === rowsText ? line : printable(line))).join("\n");
}

/** Records not yet delivered (queued or being sent), per stream, and in all. */
function undelivered(status: AgentStatus): { total: number; byStream: string } {
  const entries = Object.entries(status.streams).filter(([, stream]) => stream.pending + stream.sending > 0);
  return {
    total: entries.reduce((sum, [, stream]) => sum + stream.pending + stream.sending, 0),
    byStream: entries.map(([name, stream]) => `${name} ${stream.pending + stream.sending}`).join(", "),
  };
}

/**
 * A drain as it goes: one progress line per interval (redrawn in place on a terminal) with what is left, the
 * delivery rate and an estimate; returns once nothing is left to deliver.
 */
async function follow(url: string, intervalMs: number): Promise<void> {
  const tty = process.stdout.isTTY;
  let previous: { at: number; left: number } | undefined;
  for (;;) {
    const current = await getLocal(url, "/v1/status", AgentStatus);
    const { total, byStream } = undelivered(current);
    const now = Date.now();
    const rate = previous && now > previous.at ? Math.max(0, (previous.left - total) / ((now - previous.at) / 1000)) : undefined;
    const line =
      total === 0
        ? "drained: nothing left to deliver"
        : `${total} left (${byStream})` +
          (rate === undefined ? "" : `, ${Math.round(rate)}/s${rate > 0 ? `, about ${Math.ceil(total / rate)}s to go` : ", waiting"}`);
    process.stdout.write(tty ? `\r\x1b[2K${line}${total === 0 ? "\n" : ""}` : `${line}\n`);
    if (total === 0) return;
    previous = { at: now, left: total };
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

async function status(options: { url?: string; config?: string; json?: boolean; follow?: boolean; interval: string }): Promise<void> {
  const url = localUrl(options);
  if (options.follow) return follow(url, Math.max(100, Number(options.interval) * 1000 || 1000));
  const current = await getLocal(url, "/v1/status", AgentStatus);
  process.stdout.write(options.json ? `${JSON.stringify(current, null, 2)}\n` : `${formatStatus(current)}\n`);
}

export function statusCommand(): Command {
  return withLocalUrlOptions(
    new Command("status").description(
      "a running sidecar's license state and, per stream, queue depth, oldest pending age, last success, last error, dead letters",
    ),
  )
    .option("--json", "print GET /v1/status as JSON")
    .option("--follow", "show a drain's progress (left, rate, time to go) until nothing is left to deliver, then exit 0")
    .option("--interval <seconds>", "with --follow: refresh every this many seconds", "1")
    .action(status);
}
