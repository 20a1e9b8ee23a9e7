import type { Logger } from "pino";
import { FINAL_REVISION_STATUSES, type Revision, type RevisionStatus } from "../protocol/controlplane.ts";
import { DeployerError, type Deployer, type DeployTarget } from "./deployer.ts";
import type { DeploymentStore } from "./store.ts";

/** One step of the pipeline: the status it starts from, the one it works in, where it ends, and how it fails. */
interface Step {
  waiting: RevisionStatus[];
  working: RevisionStatus;
  failed: RevisionStatus;
}

const CREATE: Step = { waiting: ["QUEUED", "CREATING"], working: "CREATING", failed: "CREATE_FAILED" };
const BUILD: Step = { waiting: ["AWAITING_BUILD", "BUILDING"], working: "BUILDING", failed: "BUILD_FAILED" };
const DEPLOY: Step = { waiting: ["AWAITING_DEPLOY", "DEPLOYING"], working: "DEPLOYING", failed: "DEPLOY_FAILED" };

/**
 * Moves each deployment's latest revision through QUEUED -> (CREATING) -> AWAITING_BUILD -> BUILDING ->
 * AWAITING_DEPLOY -> DEPLOYING -> DEPLOYED, or to the failed status of the step that failed, with a Deployer doing
 * the work. One deployment's steps run one at a time (a chain per deployment); deployments run side by side. A
 * revision superseded while a step of it runs stops there (the store's compare-and-set moves refuse it).
 */
export class RevisionPipeline {
  readonly #store: DeploymentStore;
  readonly #deployer: Deployer;
  readonly #logger: Logger;
  readonly #chains = new Map<string, Promise<void>>();

  constructor(store: DeploymentStore, deployer: Deployer, logger: Logger) {
    this.#store = store;
    this.#deployer = deployer;
    this.#logger = logger;
  }

  /** Schedules work on a deployment's latest revision; resolves when the deployment has nothing left to do. */
  kick(deploymentId: string): Promise<void> {
    const chain = (this.#chains.get(deploymentId) ?? Promise.resolve()).then(() => this.#advance(deploymentId));
    const settled = chain.catch((err: unknown) => this.#logger.error({ err, deploymentId }, "revision pipeline failed"));
    this.#chains.set(deploymentId, settled);
    void settled.then(() => this.#chains.get(deploymentId) === settled && this.#chains.delete(deploymentId));
    return settled;
  }

  /** Waits for a deployment's work in flight (before it is deleted). */
  async idle(deploymentId: string): Promise<void> {
    await this.#chains.get(deploymentId);
  }

  /** Waits for every deployment's work in flight. */
  async idleAll(): Promise<void> {
    await Promise.all([...this.#chains.values()]);
  }

  #target(revision: Revision): DeployTarget {
    const deployment = this.#store.get(revision.deployment_id)!;
    return {
      deploymentId: deployment.id,
      revisionId: revision.id,
      source: deployment.source,
      sourceRevisionConfig: this.#store.revisionConfig(revision.id),
      secrets: this.#store.secrets(deployment.id),
      ordinal: this.#store.ordinal(deployment.id),
    };
  }

  async #advance(deploymentId: string): Promise<void> {
    for (;;) {
      const deployment = this.#store.get(deploymentId);
      if (!deployment) return; // deleted
      const revision = this.#store.revision(deploymentId, deployment.latest_revision_id)!;
      if (FINAL_REVISION_STATUSES.has(revision.status)) return;
      const step = [CREATE, BUILD, DEPLOY].find((s) => s.waiting.includes(revision.status));
      if (!step) return; // UNKNOWN: left for an operator
      if (!(await this.#run(step, revision))) return;
    }
  }

  /** Runs one step of a revision; false when the revision stops here (failed, or superseded meanwhile). */
  async #run(step: Step, revision: Revision): Promise<boolean> {
    const { id } = revision;
    if (revision.status !== step.working && !this.#store.move(id, revision.status, step.working)) return true; // re-read
    const target = this.#target(revision);
    const log = this.#logger.child({ deploymentId: target.deploymentId, revisionId: id });
    log.info({ status: step.working }, "revision step started");
    try {
      if (step === CREATE) await this.#deployer.create(target);
      else if (step === BUILD) await this.#deployer.build(target);
      else {
        const serving = await this.#deployer.deploy(target, this.#store.serving(target.deploymentId));
        // Whatever the revision's status now, this process serves the deployment.
        this.#store.setServing(target.deploymentId, serving, id);
        log.info({ url: serving.url }, "revision deployed");
        this.#store.move(id, step.working, "DEPLOYED");
        return false;
      }
    } catch (err) {
      const message = err instanceof DeployerError ? err.message : `internal error: ${(err as Error).message}`;
      if (!(err instanceof DeployerError)) log.error({ err }, "deployer step failed");
      // A failed deploy stopped the previous process first: nothing serves the deployment now.
      if (step === DEPLOY) this.#store.setServing(target.deploymentId, undefined, null);
      this.#store.move(id, step.working, step.failed, message);
      log.warn(
        { status: step.failed, reason: message, code: err instanceof DeployerError ? err.code : "EGRESS_ERR_INTERNAL" },
        "revision failed",
      );
      return false;
    }
    const next: RevisionStatus = step === CREATE ? "AWAITING_BUILD" : "AWAITING_DEPLOY";
    return this.#store.move(id, step.working, next);
  }

  /**
   * After a control plane restart: keeps what still serves, restarts the active revision of a deployment whose
   * process is gone, and resumes unfinished revisions.
   */
  async reconcile(): Promise<void> {
    for (const deploymentId of this.#store.ids()) {
      const deployment = this.#store.get(deploymentId)!;
      const serving = this.#store.serving(deploymentId);
      if (serving && !(await this.#deployer.alive(serving)) && deployment.active_revision_id) {
        const active = this.#store.revision(deploymentId, deployment.active_revision_id)!;
        this.#logger.warn({ deploymentId, url: serving.url }, "a deployed agent server is gone; starting it again");
        try {
          // The old process is passed on: a hung one is stopped, and its port taken again.
          this.#store.setServing(deploymentId, await this.#deployer.deploy(this.#target(active), serving), active.id);
        } catch (err) {
          this.#logger.error({ deploymentId, reason: (err as Error).message }, "restarting a deployed agent server failed");
          this.#store.setServing(deploymentId, undefined, null);
        }
      }
      void this.kick(deploymentId);
    }
  }
}
