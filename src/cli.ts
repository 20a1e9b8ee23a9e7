#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { a2aCommand } from "./a2a/cli.ts";
import { agentCommands } from "./sidecar/cli.ts";
import { beaconCommand } from "./beacon/cli.ts";
import { controlPlaneCommand, deploymentsCommand } from "./controlplane/cli.ts";
import { demoCommand } from "./demo-command.ts";
import { exitCodeOf } from "./error-codes.ts";
import { ConfigError, EgressError } from "./errors.ts";
import { restrictFileModes } from "./file-modes.ts";
import { healthcheckCommand } from "./health-file.ts";

/**
 * Exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad config, 3 the data dir's outbox is missing, foreign or
 * damaged (the sidecar refused to start over it; see `start --new-outbox`). An error's code says which
 * (src/error-codes.ts).
 */
export async function main(argv: string[]): Promise<number> {
  // Every data dir (the sidecar's outbox, the beacon's records and signing key, the control plane's secrets) is
  // owner-only: group 0's too under a random UID in that group (src/file-modes.ts).
  restrictFileModes();
  const program = new Command("egress-agent")
    .description("self-hosted telemetry egress sidecar, and the beacon service it reports to")
    .exitOverride()
    .showHelpAfterError();
  for (const command of agentCommands()) program.addCommand(command);
  program.addCommand(demoCommand());
  program.addCommand(beaconCommand());
  program.addCommand(a2aCommand());
  program.addCommand(controlPlaneCommand());
  program.addCommand(deploymentsCommand());
  program.addCommand(healthcheckCommand());
  const overrideExits = (command: Command) => {
    for (const sub of command.commands) overrideExits(sub.exitOverride());
  };
  overrideExits(program);
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof ConfigError) {
      process.stderr.write(`egress-agent: ${err.message}\n`);
      return exitCodeOf(err.code);
    }
    const message = err instanceof EgressError ? `${err.code}: ${err.message}` : (err as Error).message;
    process.stderr.write(`egress-agent: ${message}\n`);
    return err instanceof EgressError ? exitCodeOf(err.code) : 1;
  }
}

// `egress-agent audit | head`: a closed pipe ends the listing, quietly.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(0);
  throw err;
});
const code = await main(process.argv);
// A failed command may leave timers or sockets behind (a half-started daemon): do not linger on them.
if (code !== 0) process.exit(code);
