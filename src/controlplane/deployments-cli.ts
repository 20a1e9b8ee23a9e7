import { resolve } from "node:path";
import { Duration } from "../config/units.ts";
import { ConfigError } from "../errors.ts";
import { DeploymentStatus, type Deployment, type Revision, type SourceRevisionConfig } from "../protocol/controlplane.ts";
import { table } from "../cli-table.ts";
import { DEFAULT_BASE_URL } from "./base-url.ts";
import { ControlPlaneClient } from "./client.ts";

interface Flags {
  baseUrl?: string;
  apiKey?: string;
  json?: boolean;
  name?: string;
  graph?: string;
  image?: string;
  secret?: string[];
  wait?: boolean;
  timeout?: string;
  limit?: string;
  offset?: string;
  nameContains?: string;
  status?: string;
}

const out = (line: string): void => void process.stdout.write(`${line}\n`);

function client(flags: Flags): ControlPlaneClient {
  const apiKey = flags.apiKey ?? process.env.PLATFORM_API_KEY;
  if (!apiKey) throw new ConfigError("--api-key", ["--api-key: give the control plane's API key (or set PLATFORM_API_KEY)"]);
  return new ControlPlaneClient({ baseUrl: flags.baseUrl ?? process.env.PLATFORM_CONTROL_PLANE_URL ?? DEFAULT_BASE_URL, apiKey });
}

/** `--secret NAME=VALUE`, or `--secret NAME` for the value of env NAME (keeps it out of the process list). */
function secrets(specs: string[] | undefined): { name: string; value: string }[] | undefined {
  return specs?.map((spec) => {
    const at = spec.indexOf("=");
    const name = at < 0 ? spec : spec.slice(0, at);
    const value = at < 0 ? process.env[spec] : spec.slice(at + 1);
    if (value === undefined)
      throw new ConfigError("--secret", [`--secret: ${name} has no =VALUE and no environment variable ${name} is set`]);
    return { name, value };
  });
}

function sourceConfig(flags: Flags): SourceRevisionConfig | undefined {
  if (flags.graph !== undefined && flags.image !== undefined)
    throw new ConfigError("--graph", ["--graph: give --graph or --image, not both"]);
  if (flags.graph !== undefined) return { langgraph_config_path: resolve(flags.graph) };
  if (flags.image !== undefined) return { image_uri: flags.image };
  return undefined;
}

function int(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new ConfigError(flag, [`${flag}: must be a whole number`]);
  return Number(value);
}

const summary = (d: Deployment) =>
  `deployment ${d.id} "${d.name}" ${d.status}: revision ${d.latest_revision_id} ${d.latest_revision_status}${d.url ? ` at ${d.url}` : ""}`;

/**
 * Polls until DEPLOYED, telling each status on stderr; the final line (or JSON) says where the agent server is.
 * `revisionId`: that revision (the one a PATCH made), else the latest, following newer ones.
 */
async function waitFor(api: ControlPlaneClient, id: string, flags: Flags, revisionId?: string): Promise<void> {
  const timeoutMs = Duration.parse(flags.timeout ?? "10m");
  const { deployment } = await api.waitDeployed(id, {
    timeoutMs,
    revisionId,
    onStatus: (revision: Revision) => process.stderr.write(`revision ${revision.id}: ${revision.status}\n`),
  });
  out(flags.json ? JSON.stringify(deployment, null, 2) : `deployed: ${summary(deployment)}`);
}

export async function runDeploymentsCommand(name: string, args: string[], flags: Flags): Promise<void> {
  const api = client(flags);
  const print = (value: unknown, text: string): void => out(flags.json ? JSON.stringify(value, null, 2) : text);
  // A created or updated deployment: shown, or (--wait) followed until its latest revision is DEPLOYED.
  const changed = async (deployment: Deployment, revisionId?: string): Promise<void> => {
    if (!flags.wait) return print(deployment, summary(deployment));
    process.stderr.write(`${summary(deployment)}\n`);
    return waitFor(api, deployment.id, flags, revisionId);
  };
  switch (name) {
    case "create": {
      const config = sourceConfig(flags);
      if (!config) throw new ConfigError("--graph", ["--graph: give the graph.json to deploy (or --image)"]);
      return changed(
        await api.create({
          name: flags.name!,
          source: config.image_uri ? "external_docker" : "local",
          // Required by the OpenAPI (for external_docker here too); nothing in it applies to a CLI deployment.
          source_config: {},
          source_revision_config: config,
          secrets: secrets(flags.secret) ?? [],
        }),
      );
    }
    case "get": {
      const deployment = await api.get(args[0]!);
      return print(
        deployment,
        [
          summary(deployment),
          `  secrets: ${deployment.secrets.map((s) => s.name).join(", ") || "(none)"}`,
          `  source: ${deployment.source} ${JSON.stringify(deployment.source_revision_config)}`,
        ].join("\n"),
      );
    }
    case "list": {
      const statuses = flags.status?.split(",").map((status) => status.trim());
      const bad = statuses?.find((status) => !DeploymentStatus.safeParse(status).success);
      if (bad !== undefined) throw new ConfigError("--status", [`--status: each must be one of ${DeploymentStatus.options.join(", ")}`]);
      const query = { nameContains: flags.nameContains, status: statuses?.join(",") };
      // --limit or --offset: that one page, and where the next starts; neither: every page.
      const onePage = flags.limit !== undefined || flags.offset !== undefined;
      const page = onePage
        ? await api.list({ ...query, limit: int("--limit", flags.limit), offset: int("--offset", flags.offset) })
        : await api.listAll(query);
      const rows = page.resources.map((d) => [d.id, d.name, d.status, d.latest_revision_status, d.url ?? ""]);
      const shown = page.resources.length === 0 ? "no deployments" : table([["ID", "NAME", "STATUS", "REVISION", "URL"], ...rows]);
      return print(page, onePage && page.resources.length > 0 ? `${shown}\nnext page: --offset ${page.offset}` : shown);
    }
    case "update": {
      const config = sourceConfig(flags);
      const newSecrets = secrets(flags.secret);
      if (!config && !newSecrets)
        throw new ConfigError("--graph", ["--graph, --image or --secret: say what to roll out (each makes a new revision)"]);
      const updated = await api.update(args[0]!, { source_revision_config: config ?? null, secrets: newSecrets ?? null });
      // The PATCH made a revision (the docs' rule for a non-null config or secrets): --wait waits for that one.
      return changed(updated, updated.latest_revision_id);
    }
    case "revisions": {
      const page = await api.revisionsAll(args[0]!);
      return print(
        page,
        table([
          ["ID", "STATUS", "CREATED", "MESSAGE"],
          ...page.resources.map((r) => [r.id, r.status, r.created_at, r.status_message ?? ""]),
        ]),
      );
    }
    case "redeploy": {
      const deployment = await api.redeploy(args[0]!, args[1]!);
      return changed(deployment, deployment.latest_revision_id);
    }
    case "wait":
      return waitFor(api, args[0]!, flags);
    case "delete":
      await api.delete(args[0]!);
      return print({ deleted: args[0] }, `deleted ${args[0]}`);
  }
}
