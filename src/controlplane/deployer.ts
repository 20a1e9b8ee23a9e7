import { EgressError } from "../errors.ts";
import type { DeploymentSource, SourceRevisionConfig } from "../protocol/controlplane.ts";

/** One revision of one deployment, as a deployer gets it. */
export interface DeployTarget {
  deploymentId: string;
  revisionId: string;
  source: DeploymentSource;
  sourceRevisionConfig: SourceRevisionConfig;
  /** The deployment's secrets, opened: name -> value (the agent server's environment). */
  secrets: Record<string, string>;
  /** The deployment's number in this control plane, unique and never reused (its own user id, with runAsUidBase). */
  ordinal: number;
}

/** What serves a deployment: its base URL, and what the deployer needs to find it again (a pid, a name). */
export interface Serving {
  url: string;
  pid?: number | undefined;
}

/** A step that failed; its message (no secrets) becomes the revision's status_message. */
export class DeployerError extends EgressError {
  constructor(message: string) {
    super("EGRESS_ERR_REVISION_STEP", message);
  }
}

/**
 * What moves a revision through its statuses. Each step throws a DeployerError to fail the revision
 * (create -> CREATE_FAILED, build -> BUILD_FAILED, deploy -> DEPLOY_FAILED).
 */
export interface Deployer {
  /** QUEUED -> AWAITING_BUILD: resources of the revision (directories, names). */
  create(target: DeployTarget): Promise<void>;
  /** BUILDING: checks and loads what will run (local: the graph.json and its graphs). */
  build(target: DeployTarget): Promise<void>;
  /** DEPLOYING: starts the revision, replacing `previous`, and answers once it is healthy. */
  deploy(target: DeployTarget, previous: Serving | undefined): Promise<Serving>;
  /**
   * The deployment is deleted: stops what serves it, if anything, and removes everything it had (directories, its
   * database role and schema), whether it ever served or not.
   */
  stop(deploymentId: string, serving: Serving | undefined): Promise<void>;
  /** After a control plane restart: whether `serving` still answers (then it is kept as it is). */
  alive(serving: Serving): Promise<boolean>;
}

/** The PostgreSQL schema of a deployment's agent server (DATABASE_SCHEMA): its own, when deployments share a database. */
export function deploymentSchema(deploymentId: string): string {
  return `deployment_${deploymentId.toLowerCase().replace(/[^a-z0-9_]/g, "_")}`.slice(0, 63);
}
