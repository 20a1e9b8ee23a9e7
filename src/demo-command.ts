import { Command } from "commander";

/**
 * `egress-agent demo`. The demo itself (a beacon, a sidecar, the agent server) loads when it runs: every process of
 * the CLI, the sidecar's too, builds its commands from modules like this one.
 */
export function demoCommand(): Command {
  return new Command("demo")
    .description("start a local beacon and sidecar on embedded defaults, feed sample data, print what was delivered")
    .option("--transactions <n>", "how many sample trace transactions", "250")
    .option("--keep", "keep the temporary data dir, configs and logs")
    .action(async (options: { keep?: boolean; transactions: string }) => (await import("./demo.ts")).demo(options));
}
