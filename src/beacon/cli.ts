import { Command, Option } from "commander";
import { z } from "zod";
import { ConfigError } from "../errors.ts";
import { createLogger } from "../log.ts";
import { loadBeaconConfig } from "./config.ts";
import { formatTraceReport } from "./report.ts";
import { startBeacon } from "./server.ts";
import { BeaconStore } from "./store.ts";

const Month = z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/);

/** Runs until SIGTERM or SIGINT, then closes the server and the store and resolves. */
async function serve(options: { config?: string; listen?: string }): Promise<void> {
  const config = loadBeaconConfig(options.config, { listen: options.listen });
  const logger = createLogger(config.logLevel);
  const beacon = await startBeacon(config, { logger });
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      logger.info({ signal }, "beacon stopping");
      resolve();
    };
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  });
  await beacon.close();
  logger.info("beacon stopped");
}

function report(options: { config?: string; org?: string; month?: string; json?: boolean }): void {
  if (options.org !== undefined && !z.uuid().safeParse(options.org).success) {
    throw new ConfigError("--org", ["--org: must be an organization UUID"]);
  }
  if (options.month !== undefined && !Month.safeParse(options.month).success) {
    throw new ConfigError("--month", ["--month: must be YYYY-MM"]);
  }
  const config = loadBeaconConfig(options.config);
  const store = new BeaconStore(config.dataDir, { readonly: true });
  try {
    const rows = store.traceReport({ organizationId: options.org, month: options.month });
    process.stdout.write(options.json ? `${JSON.stringify(rows, null, 2)}\n` : formatTraceReport(rows));
  } finally {
    store.close();
  }
}

export function beaconCommand(): Command {
  const beacon = new Command("beacon").description("the beacon service: the receiving side of all egress");
  beacon
    .command("serve", { isDefault: true })
    .description("run the beacon service (the default when no subcommand is given)")
    .option("--config <file>", "beacon YAML config (default: embedded defaults)")
    .option("--listen <host:port>", "address to listen on; beats the config file")
    .action(serve);
  beacon
    .command("report")
    .description("trace counts per organization per month, from what was ingested")
    .option("--config <file>", "beacon YAML config (for dataDir)")
    .addOption(new Option("--org <uuid>", "only this organization"))
    .option("--month <YYYY-MM>", "only this month (of the transactions' interval start)")
    .option("--json", "print JSON rows instead of a table")
    .action(report);
  return beacon;
}
