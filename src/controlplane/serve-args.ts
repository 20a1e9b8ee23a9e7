import { DeployerError, type DeployTarget } from "./deployer.ts";

/** The revision's graph.json, as the source revision config names it. */
export function graphJson(target: DeployTarget): string {
  const path = target.sourceRevisionConfig.langgraph_config_path;
  if (!path) throw new DeployerError("source_revision_config.langgraph_config_path is required for source local");
  return path;
}

/** The `a2a serve` arguments of a deployment's agent server: its graphs, its port on loopback, its data dir, its sidecar. */
export function serveArgs(
  target: DeployTarget,
  settings: {
    port: number;
    dataDir: string;
    sidecarUrl?: string | undefined;
    tenantId?: string | undefined;
    organizationId?: string | undefined;
  },
): string[] {
  const args = ["a2a", "serve", "--config", graphJson(target), "--listen", `127.0.0.1:${settings.port}`, "--data-dir", settings.dataDir];
  if (settings.sidecarUrl) args.push("--sidecar-url", settings.sidecarUrl);
  if (settings.tenantId) args.push("--tenant-id", settings.tenantId);
  if (settings.organizationId) args.push("--organization-id", settings.organizationId);
  return args;
}
