import { Command } from "commander";
import { AgentStatus } from "../../protocol/local-api.ts";
import { DEFAULT_LOCAL_URL, getLocal, table } from "./local-api-client.ts";

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
      (license.expiresAt ? `  expires ${license.expiresAt}` : "") +
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
      String(stream.completed),
      String(stream.failed),
      stream.lastSuccessAt ?? "-",
      stream.lastError?.at ?? "-",
    ]);
  }
  lines.push(table(rows));
  for (const [name, stream] of Object.entries(status.streams)) {
    if (stream.lastError) lines.push(`${name}: last error ${stream.lastError.at}: ${stream.lastError.message}`);
    for (const dead of stream.deadLetters) lines.push(`${name}: dead letter ${dead.recordId ?? "-"} after ${dead.attempts} failed sends: ${dead.error ?? ""}`);
  }
  return lines.join("\n");
}

async function status(options: { url: string; json?: boolean }): Promise<void> {
  const current = await getLocal(options.url, "/v1/status", AgentStatus);
  process.stdout.write(options.json ? `${JSON.stringify(current, null, 2)}\n` : `${formatStatus(current)}\n`);
}

export function statusCommand(): Command {
  return new Command("status")
    .description("a running sidecar's license state and, per stream, queue depth, oldest pending age, last success, last error, dead letters")
    .option("--url <url>", "the sidecar's local API", DEFAULT_LOCAL_URL)
    .option("--json", "print GET /v1/status as JSON")
    .action(status);
}
