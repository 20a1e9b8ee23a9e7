import { writeFileSync } from "node:fs";
import { Command, Option } from "commander";
import * as z from "zod";
import { ConfigError } from "../errors.ts";
import { createLogger } from "../log.ts";
import { loadBeaconConfig } from "./config.ts";
import { formatTraceReport } from "./report.ts";
import { type License, LicenseRegistry, licenseOfRecord } from "./licenses.ts";
import { TokenIssuer } from "./token-issuer.ts";
import { Duration } from "../config/units.ts";
import { serveUntilSignal } from "../serve-until-signal.ts";
import { instancesCommand } from "./admin/instances-client.ts";
import { licensesCommand } from "./admin/cli.ts";
import { importCommand } from "./admin/import-cli.ts";

// The beacon's server and store load when a command uses them: every process of the CLI (the sidecar's too) loads
// this module to know the commands, and the beacon's parts cost the sidecar about 2 MiB of idle memory (bench/).

const Month = z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/);

/** The beacon server's semi-spaces (MiB): a young generation sized for throughput, not for a sidecar's idle memory. */
const SERVER_SEMI_SPACE_MB = 16;
/**
 * Its old generation's floor (MB) before a full collection is due. V8 starts marking once the room under that limit
 * is less than three semi-spaces (48 MB with 16 MiB ones): a server whose live heap is a few tens of MB, grown by half
 * (bin/egress-agent.js), was marking back to back. With it, the marking threads' CPU in the OTLP relay halved.
 */
const SERVER_OLD_SPACE_FLOOR_MB = 96;

/**
 * bin/egress-agent.js starts every command with the sidecar's 4 MiB semi-spaces (sized for a sidecar, bench/). V8
 * reads them once, when the process starts: the beacon's server, which serves many sidecars and keeps no such budget,
 * starts itself again (the same process: execve) with its own. Garbage collection was a tenth of its CPU in a drain,
 * and about that less with 16 MiB (bench/RESULTS.md). Nothing is open yet, so nothing is lost by it.
 */
function withServerHeap(): void {
  const at = process.execArgv.findIndex((arg) => arg.startsWith("--max-semi-space-size="));
  if (at === -1 || Number(process.execArgv[at]!.split("=")[1]) >= SERVER_SEMI_SPACE_MB || !process.execve) return;
  // An operator's larger floor stays.
  const floors = process.execArgv.filter((arg) => arg.startsWith("--initial-old-space-size=")).map((arg) => Number(arg.split("=")[1]));
  const execArgv = process.execArgv
    .filter((arg) => !arg.startsWith("--initial-old-space-size="))
    .map((arg) => (arg.startsWith("--max-semi-space-size=") ? `--max-semi-space-size=${SERVER_SEMI_SPACE_MB}` : arg))
    .concat(`--initial-old-space-size=${Math.max(SERVER_OLD_SPACE_FLOOR_MB, ...floors.filter(Number.isFinite))}`);
  process.execve(process.execPath, [process.execPath, ...execArgv, ...process.argv.slice(1)], process.env);
}

/** Runs until SIGTERM or SIGINT, then closes the server and the store. */
async function serve(options: { config?: string; listen?: string }): Promise<void> {
  withServerHeap();
  const config = loadBeaconConfig(options.config, { listen: options.listen });
  const logger = createLogger(config.logLevel);
  await serveUntilSignal({
    name: "beacon",
    logger,
    start: async () => (await import("./server.ts")).startBeacon(config, { logger }),
  });
}

async function openIssuer(configFile: string | undefined): Promise<{ issuer: TokenIssuer }> {
  const config = loadBeaconConfig(configFile);
  const issuer = await TokenIssuer.open({
    dataDir: config.dataDir,
    signingKeyFile: config.signingKeyFile,
    ttlMs: config.tokenTtl,
    now: Date.now,
  });
  return { issuer };
}

/** A license by id: the database's (where the admin API puts them), else the config's when the database has none yet. */
async function findLicense(configFile: string | undefined, id: string): Promise<License | undefined> {
  const config = loadBeaconConfig(configFile);
  try {
    const store = await (await import("./storage.ts")).openBeaconStorage(config, { readonly: true });
    try {
      const record = await store.licenses.get(id);
      if (record) return licenseOfRecord(record);
    } finally {
      await store.close();
    }
  } catch {
    // No database yet (or one of a beacon before licenses were kept there): the config's licenses.
  }
  return LicenseRegistry.ofConfig(config.licenses).findById(id);
}

/** Prints an offline license (a long-lived signed JWT) for a license this beacon knows. */
async function issueOfflineLicense(options: { config?: string; license: string; validFor: string; output?: string }): Promise<void> {
  const validFor = Duration.safeParse(options.validFor);
  if (!validFor.success) throw new ConfigError("--valid-for", ["--valid-for: must be a duration like 365d"]);
  const { issuer } = await openIssuer(options.config);
  const license = await findLicense(options.config, options.license);
  if (!license)
    throw new ConfigError("--license", [`--license: no license with id "${options.license}" in the beacon's database or config`]);
  if (license.revokedAt) throw new ConfigError("--license", [`--license: license ${license.id} is revoked`]);
  if (!license.offlineAllowed)
    throw new ConfigError("--license", [`--license: license ${license.id} does not allow offline use (offlineAllowed: false)`]);
  const token = await issuer.issueOffline(license, new Date(Date.now() + validFor.data));
  if (options.output) writeFileSync(options.output, `${token}\n`, { mode: 0o600 });
  else process.stdout.write(`${token}\n`);
}

async function publicKey(options: { config?: string }): Promise<void> {
  const { issuer } = await openIssuer(options.config);
  process.stdout.write(issuer.publicKeyPem);
}

async function report(options: { config?: string; license?: string; org?: string; month?: string; json?: boolean }): Promise<void> {
  if (options.org !== undefined && !z.uuid().safeParse(options.org).success) {
    throw new ConfigError("--org", ["--org: must be an organization UUID"]);
  }
  if (options.month !== undefined && !Month.safeParse(options.month).success) {
    throw new ConfigError("--month", ["--month: must be YYYY-MM"]);
  }
  const config = loadBeaconConfig(options.config);
  const store = await (await import("./storage.ts")).openBeaconStorage(config, { readonly: true });
  try {
    const rows = await store.traceReport({ licenseId: options.license, organizationId: options.org, month: options.month });
    process.stdout.write(options.json ? `${JSON.stringify(rows, null, 2)}\n` : formatTraceReport(rows));
  } finally {
    await store.close();
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
    .description("trace counts per license per month (by organization within each license), from what was ingested")
    .option("--config <file>", "beacon YAML config (for dataDir, or database.url)")
    .option("--license <id>", "only this license")
    .addOption(new Option("--org <uuid>", "only this organization"))
    .option("--month <YYYY-MM>", "only this month (of the transactions' interval start)")
    .option("--json", "print JSON rows instead of a table")
    .action(report);
  beacon
    .command("issue-offline-license")
    .description("print an offline license (signed JWT) for an air-gapped sidecar")
    .requiredOption("--license <id>", "id of a license in the beacon config")
    .option("--valid-for <duration>", "lifetime, capped by the license's own expiry", "365d")
    .option("--config <file>", "beacon YAML config (licenses, signing key)")
    .option("--output <file>", "write to this file (mode 600) instead of stdout")
    .action(issueOfflineLicense);
  beacon
    .command("public-key")
    .description("print the signing public key (PEM), for a sidecar's offline.publicKeyFile")
    .option("--config <file>", "beacon YAML config (signing key)")
    .action(publicKey);
  beacon.addCommand(instancesCommand());
  beacon.addCommand(licensesCommand());
  beacon.addCommand(importCommand());
  return beacon;
}
