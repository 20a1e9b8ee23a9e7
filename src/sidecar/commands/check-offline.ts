import { Command } from "commander";
import { loadAgentConfig, type AgentConfig } from "../config.ts";
import { ConfigError, EgressError } from "../../errors.ts";
import { destinations } from "../egress/destinations.ts";
import { OfflineLicense } from "../license/offline-license.ts";

const MIN_REMAINING_MS = 30 * 86_400_000;

/** Each reason a config is not offline-safe; none means it is. */
export async function offlineProblems(
  file: string | undefined,
  env: NodeJS.ProcessEnv,
  now = new Date(),
): Promise<{ problems: string[]; facts: string[] }> {
  let config: AgentConfig;
  try {
    config = loadAgentConfig({ file, env });
  } catch (err) {
    if (err instanceof ConfigError) return { problems: err.problems.map((p) => `config: ${p}`), facts: [] };
    throw err;
  }
  const problems: string[] = [];
  const facts: string[] = [];
  if (!config.offline.enabled) problems.push("offline.enabled is false (set it to true, or EGRESS_OFFLINE=true)");
  else {
    try {
      const status = await new OfflineLicense({ ...config.offline, now: () => now.getTime() }).check();
      if (status.state !== "valid") problems.push(`offline.licenseFile: ${status.lastError ?? status.state}`);
      else {
        const remaining = Date.parse(status.expiresAt!) - now.getTime();
        const days = Math.floor(remaining / 86_400_000);
        if (remaining < MIN_REMAINING_MS)
          problems.push(
            `offline.licenseFile: expires ${status.expiresAt}, within 30 days (${days} days left): ask the vendor for a new one`,
          );
        else
          facts.push(
            `offline license ${status.licenseId} verifies against offline.publicKeyFile and expires ${status.expiresAt} (${days} days)`,
          );
      }
    } catch (err) {
      if (!(err instanceof EgressError)) throw err;
      problems.push(...(err instanceof ConfigError ? err.problems : [err.message]));
    }
  }
  const reachable = destinations(config);
  for (const destination of reachable)
    problems.push(`${destination.stream} can reach ${destination.url}${destination.proxy ? ` via ${destination.proxy}` : ""}`);
  if (reachable.length === 0 && config.offline.enabled) {
    facts.push("no stream has a network destination: billing stays local, telemetry and usage snapshots are off");
  }
  return { problems, facts };
}

async function checkOffline(options: { config?: string }): Promise<void> {
  const { problems, facts } = await offlineProblems(options.config, process.env);
  if (problems.length > 0) {
    process.stderr.write(`not offline-safe:\n${problems.map((p) => `  ${p}`).join("\n")}\n`);
    process.exitCode = 2;
    return;
  }
  process.stdout.write(`offline-safe:\n${facts.map((f) => `  ${f}`).join("\n")}\n`);
}

export function checkOfflineCommand(): Command {
  return new Command("check-offline")
    .description(
      "exit 0 only if the config is offline, its offline license verifies and lasts 30 more days, and no stream can reach the network; else exit 2 listing why",
    )
    .option("--config <file>", "sidecar YAML config (default: env EGRESS_CONFIG, else embedded defaults)")
    .action(checkOffline);
}
