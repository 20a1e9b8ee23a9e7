import { createWriteStream } from "node:fs";
import { Command } from "commander";
import { loadAgentConfig } from "./config.ts";
import { createLogger, WarningLogTap } from "../log.ts";
import type { TraceTransaction } from "../protocol/trace-transaction.ts";
import { startAgent } from "./daemon.ts";
import { Outbox } from "./storage/outbox.ts";
import { sentAttempts } from "./shippers/billing.ts";
import { serveUntilSignal } from "../serve-until-signal.ts";
import { auditCommand } from "./commands/audit.ts";
import { checkOfflineCommand } from "./commands/check-offline.ts";
import { previewCommand } from "./commands/preview.ts";
import { statusCommand } from "./commands/status.ts";
import { parseSince } from "./commands/since.ts";
import { validateCommand } from "./commands/validate.ts";

async function start(options: { config?: string; listen?: string; newOutbox?: boolean }): Promise<void> {
  const config = loadAgentConfig({ file: options.config, env: process.env, listen: options.listen });
  // Warnings and errors also become the sidecar's own telemetry logs (when config.telemetry.logs is on).
  const logTap = new WarningLogTap();
  const logger = createLogger(config.logLevel, undefined, logTap, [config.licenseKey]);
  // Nothing may keep a stopping sidecar past 10 s; records not yet sent stay in the outbox.
  await serveUntilSignal({
    name: "sidecar",
    logger,
    start: () => startAgent(config, { logger, logTap, newOutbox: options.newOutbox }),
    deadlineMs: 10_000,
  });
}

/** Writes billing records whose interval starts at or after --since as JSON lines: the offline true-up. */
async function exportRecords(options: { config?: string; since: string; output?: string }): Promise<void> {
  const since = parseSince(options.since);
  const config = loadAgentConfig({ file: options.config, env: process.env });
  const outbox = new Outbox(config.dataDir, { readonly: true });
  const out = options.output ? createWriteStream(options.output, { mode: 0o600 }) : process.stdout;
  let written = 0;
  try {
    for (const record of outbox.history.records("billing")) {
      const transaction = { ...(JSON.parse(record.body) as TraceTransaction), num_failed_send_attempts: sentAttempts(record) };
      if (Date.parse(transaction.start_interval_time) < since) continue;
      if (!out.write(`${JSON.stringify(transaction)}\n`)) await new Promise<void>((resolve) => out.once("drain", () => resolve()));
      written++;
      if (process.stderr.isTTY && written % 10_000 === 0) process.stderr.write(`\rexported ${written} records`);
    }
  } finally {
    outbox.close();
  }
  if (out !== process.stdout) {
    await new Promise<void>((resolve, reject) => {
      out.once("error", reject);
      out.end(() => resolve());
    });
  }
  process.stderr.write(`${process.stderr.isTTY ? "\r" : ""}exported ${written} billing records\n`);
}

export function agentCommands(): Command[] {
  const start_ = new Command("start")
    .description("run the egress sidecar")
    .option("--config <file>", "sidecar YAML config (default: env EGRESS_CONFIG, else embedded defaults)")
    .option("--listen <host:port>", "local API address; beats the config file")
    .option(
      "--new-outbox",
      "start a new, empty outbox when the data dir's is missing, foreign or damaged (what is there is moved aside, not deleted)",
    )
    .action(start);
  const export_ = new Command("export")
    .description("write billing records as JSON lines (offline true-up)")
    .requiredOption("--since <date>", "records whose interval starts at or after this date (YYYY-MM-DD or ISO 8601)")
    .option("--config <file>", "sidecar YAML config (for dataDir)")
    .option("--output <file>", "write to this file instead of stdout")
    .action(exportRecords);
  return [start_, export_, validateCommand(), statusCommand(), auditCommand(), previewCommand(), checkOfflineCommand()];
}
