import { Command } from "commander";
import { loadAgentConfig } from "./config.ts";
import { createLogger, WarningLogTap } from "../log.ts";
import { startAgent } from "./daemon.ts";
import { serveUntilSignal } from "../serve-until-signal.ts";
import { auditCommand } from "./commands/audit.ts";
import { checkOfflineCommand } from "./commands/check-offline.ts";
import { exportRecords } from "./commands/export.ts";
import { previewCommand } from "./commands/preview.ts";
import { statusCommand } from "./commands/status.ts";
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
    .description("write billing records as JSON lines after a header line naming the instance and license (offline true-up)")
    .requiredOption("--since <date>", "records whose interval starts at or after this date (YYYY-MM-DD or ISO 8601)")
    .option("--config <file>", "sidecar YAML config (for dataDir)")
    .option("--output <file>", "write to this file instead of stdout")
    .action(exportRecords);
  return [start_, export_, validateCommand(), statusCommand(), auditCommand(), previewCommand(), checkOfflineCommand()];
}
