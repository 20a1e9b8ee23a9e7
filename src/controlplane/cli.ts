import { Command, Option } from "commander";
import { ConfigError } from "../errors.ts";
import { Duration } from "../config/units.ts";
import { DEFAULT_BASE_URL } from "./base-url.ts";

// `egress-agent controlplane serve|hash-key` and `egress-agent deployments ...`. The modules behind them load on
// use: the sidecar's own commands never pay for the control plane.

async function serve(options: { config?: string; listen?: string }): Promise<void> {
  const { runControlPlane } = await import("./serve.ts");
  await runControlPlane(options);
}

async function hashKey(key: string | undefined): Promise<void> {
  const { hashApiKey } = await import("../http/api-keys.ts");
  let value = key;
  if (value === undefined) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    value = Buffer.concat(chunks).toString("utf8").trim();
  }
  if (!value) throw new ConfigError("key", ["key: give the API key as an argument or on standard input"]);
  process.stdout.write(`${hashApiKey(value)}\n`);
}

export function controlPlaneCommand(): Command {
  const controlplane = new Command("controlplane").description("the deployment control plane API server");
  controlplane
    .command("serve", { isDefault: true })
    .description("run the control plane (the default when no subcommand is given)")
    .option("--config <file>", "control plane YAML config (default: embedded defaults)")
    .option("--listen <host:port>", "address to listen on; beats the config file")
    .action(serve);
  controlplane
    .command("hash-key")
    .description("print the sha256:<hex> form of an API key, for apiKeys in the config (hashed at rest)")
    .argument("[key]", "the key (default: read from standard input, which keeps it out of the shell history)")
    .action(hashKey);
  return controlplane;
}

interface ClientFlags {
  baseUrl?: string;
  apiKey?: string;
  json?: boolean;
}

/** Options every `deployments` subcommand takes. */
function withClientOptions(command: Command): Command {
  return command
    .option("--base-url <url>", `the control plane (env PLATFORM_CONTROL_PLANE_URL; default ${DEFAULT_BASE_URL})`)
    .option("--api-key <key>", "X-Api-Key (env PLATFORM_API_KEY)")
    .option("--json", "print JSON");
}

/** Loads the client commands' module and runs one; flags are parsed there, once. */
function run(name: string) {
  return async (...args: unknown[]) => {
    const command = args.at(-1) as Command;
    const { runDeploymentsCommand } = await import("./deployments-cli.ts");
    await runDeploymentsCommand(name, command.args, command.opts<ClientFlags & Record<string, unknown>>());
  };
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function deploymentsCommand(): Command {
  const deployments = new Command("deployments").description(
    "the control plane client for CI/CD: create, update and wait for agent server deployments",
  );
  const timeout = () =>
    new Option("--timeout <duration>", "how long --wait / wait polls before giving up").default("10m").argParser((value) => {
      if (!Duration.safeParse(value).success) throw new ConfigError("--timeout", ["--timeout: must be a duration like 10m"]);
      return value;
    });
  /** What create and update both take: what runs, its secrets, and whether to wait for it. */
  const withSourceOptions = (command: Command) =>
    command
      .option("--graph <graph.json>", "source local: the graph.json to deploy (made absolute)")
      .option("--image <uri>", "source external_docker: the image to deploy")
      .option("--secret <NAME=VALUE>", "a secret (repeatable; on update, the whole set); NAME alone takes the value of env NAME", collect)
      .option("--wait", "then wait until the latest revision is DEPLOYED")
      .addOption(timeout());
  withSourceOptions(
    withClientOptions(
      deployments
        .command("create")
        .description("create a deployment (its first revision starts at once); --wait does the quick start in one command"),
    ),
  )
    .requiredOption("--name <name>", "deployment name")
    .action(run("create"));
  withClientOptions(deployments.command("get").description("show a deployment").argument("<deployment_id>")).action(run("get"));
  withClientOptions(deployments.command("list").description("list deployments, newest first (every page unless --limit or --offset)"))
    .option("--limit <n>", "only one page of this many (1-100)")
    .option("--offset <n>", "only the page from here (a list's offset: where its next page starts)")
    .option("--name-contains <text>", "only names containing this")
    .option("--status <statuses>", "only deployments with one of these statuses (comma-separated: READY, AWAITING_DATABASE, UNKNOWN, ...)")
    .action(run("list"));
  withSourceOptions(
    withClientOptions(
      deployments
        .command("update")
        .description("roll out: --graph or --image (even unchanged) or --secret makes a new revision; --wait waits for it")
        .argument("<deployment_id>"),
    ),
  ).action(run("update"));
  withClientOptions(
    deployments.command("revisions").description("list a deployment's revisions, newest first").argument("<deployment_id>"),
  ).action(run("revisions"));
  withClientOptions(
    deployments
      .command("redeploy")
      .description("deploy a revision's config again, as a new revision")
      .argument("<deployment_id>")
      .argument("<revision_id>"),
  )
    .option("--wait", "then wait until it is DEPLOYED")
    .addOption(timeout())
    .action(run("redeploy"));
  withClientOptions(
    deployments
      .command("wait")
      .description("poll the latest revision until DEPLOYED; a failed one exits 1 naming its status")
      .argument("<deployment_id>"),
  )
    .addOption(timeout())
    .action(run("wait"));
  withClientOptions(
    deployments.command("delete").description("delete a deployment and stop its agent server").argument("<deployment_id>"),
  ).action(run("delete"));
  return deployments;
}
