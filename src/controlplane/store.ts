import { randomUUID } from "node:crypto";
import type Database from "better-sqlite3";
import {
  FINAL_REVISION_STATUSES,
  type Deployment,
  type DeploymentSource,
  type DeploymentStatus,
  type Revision,
  type RevisionStatus,
  type SourceRevisionConfig,
} from "../protocol/controlplane.ts";
import type { Clock } from "../clock.ts";
import type { Serving } from "./deployer.ts";
import type { SecretBox } from "./secret-box.ts";
import {
  answerConfig,
  type DeploymentRow,
  type RevisionRow,
  SCHEMA,
  SELECT_DEPLOYMENT,
  SELECT_REVISION,
  toRevision,
} from "./store-rows.ts";

/** Statuses of a revision that has not started work: a newer revision skips it. */
const NOT_STARTED: readonly RevisionStatus[] = ["CREATING", "QUEUED", "AWAITING_BUILD"];

export interface NewDeployment {
  name: string;
  source: DeploymentSource;
  sourceConfig: Record<string, unknown>;
  sourceRevisionConfig: SourceRevisionConfig;
  secrets: Record<string, string>;
}

/**
 * Deployments and their revisions in the control plane's SQLite file. Secret values are sealed before they are
 * stored; only their names come back out with a deployment. Status moves are compare-and-set, so a step that
 * finishes after a newer revision superseded its own cannot move it on.
 */
export class DeploymentStore {
  readonly #db: Database.Database;
  readonly #box: SecretBox;
  readonly #now: Clock;
  /** Every deployment's tenant_id: one control plane, one tenant (agentServer.tenantId, else one made at first start). */
  readonly tenantId: string;

  constructor(db: Database.Database, box: SecretBox, now: Clock, tenantId?: string) {
    this.#db = db;
    this.#box = box;
    this.#now = now;
    db.exec(SCHEMA);
    db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('tenant_id', ?)").run(randomUUID());
    this.tenantId = tenantId ?? db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'tenant_id'").get()!.value;
  }

  #toDeployment(row: DeploymentRow): Deployment {
    return {
      id: row.id,
      tenant_id: this.tenantId,
      name: row.name,
      source: row.source,
      source_config: JSON.parse(row.source_config) as Record<string, unknown>,
      source_revision_config: answerConfig(row.source_revision_config),
      secrets: (JSON.parse(row.secret_names) as string[]).map((name) => ({ name })),
      secret_references: null,
      image_version: null,
      latest_revision_id: row.latest_revision_id,
      active_revision_id: row.active_revision_id,
      status: row.status,
      latest_revision_status: row.revision_status,
      url: row.url,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  #iso(): string {
    return new Date(this.#now()).toISOString();
  }

  create(input: NewDeployment): Deployment {
    const id = randomUUID();
    const revisionId = randomUUID();
    const at = this.#iso();
    this.#db.transaction(() => {
      this.#db
        .prepare(
          `INSERT INTO deployments (id, name, source, source_config, source_revision_config, secret_names, secrets_sealed, latest_revision_id, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          id,
          input.name,
          input.source,
          JSON.stringify(input.sourceConfig),
          JSON.stringify(input.sourceRevisionConfig),
          JSON.stringify(Object.keys(input.secrets)),
          this.#box.seal(JSON.stringify(input.secrets)),
          revisionId,
          at,
          at,
        );
      this.#insertRevision(revisionId, id, input.sourceRevisionConfig, at);
    })();
    return this.get(id)!;
  }

  #insertRevision(revisionId: string, deploymentId: string, config: SourceRevisionConfig, at: string): void {
    this.#db
      .prepare(
        "INSERT INTO revisions (id, deployment_id, status, source_revision_config, created_at, updated_at) VALUES (?, ?, 'QUEUED', ?, ?, ?)",
      )
      .run(revisionId, deploymentId, JSON.stringify(config), at, at);
  }

  get(id: string): Deployment | undefined {
    const row = this.#db.prepare<[string], DeploymentRow>(`${SELECT_DEPLOYMENT} WHERE d.id = ?`).get(id);
    return row && this.#toDeployment(row);
  }

  /** Newest first; each filter given is a list of accepted values (JSON arrays, matched with json_each). */
  list(filter: {
    limit: number;
    offset: number;
    nameContains?: string | undefined;
    statuses?: readonly DeploymentStatus[] | undefined;
    ids?: readonly string[] | undefined;
    deploymentTypes?: readonly string[] | undefined;
  }): Deployment[] {
    const like = filter.nameContains === undefined ? null : `%${filter.nameContains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const json = (values: readonly string[] | undefined) => (values === undefined ? null : JSON.stringify(values));
    return this.#db
      .prepare<[Record<string, string | number | null>], DeploymentRow>(
        `SELECT * FROM (${SELECT_DEPLOYMENT} WHERE (@like IS NULL OR d.name LIKE @like ESCAPE '\\')
           AND (@ids IS NULL OR d.id IN (SELECT value FROM json_each(@ids)))
           AND (@types IS NULL OR json_extract(d.source_config, '$.deployment_type') IN (SELECT value FROM json_each(@types)))) AS listed
         WHERE (@statuses IS NULL OR listed.status IN (SELECT value FROM json_each(@statuses)))
         ORDER BY listed.seq DESC LIMIT @limit OFFSET @offset`,
      )
      .all({
        like,
        ids: json(filter.ids),
        types: json(filter.deploymentTypes),
        statuses: json(filter.statuses),
        limit: filter.limit,
        offset: filter.offset,
      })
      .map((row) => this.#toDeployment(row));
  }

  /** All deployment ids, oldest first (for reconciling after a restart). */
  ids(): string[] {
    return this.#db
      .prepare<[], { id: string }>("SELECT id FROM deployments ORDER BY seq")
      .all()
      .map((row) => row.id);
  }

  secrets(id: string): Record<string, string> {
    const row = this.#db.prepare<[string], { secrets_sealed: string }>("SELECT secrets_sealed FROM deployments WHERE id = ?").get(id);
    return row ? (JSON.parse(this.#box.open(row.secrets_sealed)) as Record<string, string>) : {};
  }

  /**
   * Applies a PATCH: `sourceConfig` merged into the stored one, `secrets` replacing the set. With `newRevision`, a
   * revision running `sourceRevisionConfig` (or the current config) is added, superseding the unfinished older ones.
   * Returns the new revision's id, if any.
   */
  update(
    id: string,
    patch: {
      sourceConfig?: Record<string, unknown>;
      sourceRevisionConfig?: SourceRevisionConfig;
      secrets?: Record<string, string>;
      newRevision: boolean;
    },
  ): string | undefined {
    const at = this.#iso();
    return this.#db.transaction(() => {
      if (patch.sourceConfig !== undefined) {
        const row = this.#db.prepare<[string], { source_config: string }>("SELECT source_config FROM deployments WHERE id = ?").get(id)!;
        const merged = { ...(JSON.parse(row.source_config) as Record<string, unknown>), ...patch.sourceConfig };
        this.#db.prepare("UPDATE deployments SET source_config = ?, updated_at = ? WHERE id = ?").run(JSON.stringify(merged), at, id);
      }
      if (patch.secrets !== undefined) {
        this.#db
          .prepare("UPDATE deployments SET secret_names = ?, secrets_sealed = ?, updated_at = ? WHERE id = ?")
          .run(JSON.stringify(Object.keys(patch.secrets)), this.#box.seal(JSON.stringify(patch.secrets)), at, id);
      }
      if (!patch.newRevision) return undefined;
      return this.#addRevision(id, patch.sourceRevisionConfig ?? this.config(id), at);
    })();
  }

  /** The deployment's number: its row's, unique and never reused (AUTOINCREMENT). */
  ordinal(id: string): number {
    return this.#db.prepare<[string], { seq: number }>("SELECT seq FROM deployments WHERE id = ?").get(id)!.seq;
  }

  /** The deployment's current source revision config, as stored (only the fields that are set). */
  config(id: string): SourceRevisionConfig {
    const row = this.#db
      .prepare<[string], { source_revision_config: string }>("SELECT source_revision_config FROM deployments WHERE id = ?")
      .get(id)!;
    return JSON.parse(row.source_revision_config) as SourceRevisionConfig;
  }

  /** What a revision runs, as stored. */
  revisionConfig(revisionId: string): SourceRevisionConfig {
    const row = this.#db
      .prepare<[string], { source_revision_config: string }>("SELECT source_revision_config FROM revisions WHERE id = ?")
      .get(revisionId)!;
    return JSON.parse(row.source_revision_config) as SourceRevisionConfig;
  }

  /** A new revision running `config` (a redeploy); it supersedes the unfinished older ones. */
  addRevision(deploymentId: string, config: SourceRevisionConfig): string {
    return this.#db.transaction(() => this.#addRevision(deploymentId, config, this.#iso()))();
  }

  #addRevision(deploymentId: string, config: SourceRevisionConfig, at: string): string {
    const revisionId = randomUUID();
    const reason = `superseded by revision ${revisionId}`;
    for (const old of this.revisions(deploymentId, { limit: 1_000, offset: 0 })) {
      if (FINAL_REVISION_STATUSES.has(old.status)) continue;
      this.#setStatus(old.id, old.status, NOT_STARTED.includes(old.status) ? "SKIPPED" : "INTERRUPTED", reason, at);
    }
    this.#insertRevision(revisionId, deploymentId, config, at);
    // The deployment's config is its latest revision's (a redeploy of an older one brings that one's back).
    this.#db
      .prepare("UPDATE deployments SET latest_revision_id = ?, source_revision_config = ?, updated_at = ? WHERE id = ?")
      .run(revisionId, JSON.stringify(config), at, deploymentId);
    return revisionId;
  }

  revision(deploymentId: string, revisionId: string): Revision | undefined {
    const row = this.#db
      .prepare<[string, string], RevisionRow>(`${SELECT_REVISION} WHERE r.id = ? AND r.deployment_id = ?`)
      .get(revisionId, deploymentId);
    return row && toRevision(row);
  }

  /** Newest first; `statuses`, when given, the ones to list. */
  revisions(deploymentId: string, page: { limit: number; offset: number; statuses?: readonly RevisionStatus[] | undefined }): Revision[] {
    return this.#db
      .prepare<[Record<string, string | number | null>], RevisionRow>(
        `${SELECT_REVISION} WHERE r.deployment_id = @id AND (@statuses IS NULL OR r.status IN (SELECT value FROM json_each(@statuses)))
         ORDER BY r.seq DESC LIMIT @limit OFFSET @offset`,
      )
      .all({ id: deploymentId, statuses: page.statuses ? JSON.stringify(page.statuses) : null, limit: page.limit, offset: page.offset })
      .map(toRevision);
  }

  #setStatus(revisionId: string, from: RevisionStatus, to: RevisionStatus, message: string | null, at: string): boolean {
    return (
      this.#db
        .prepare("UPDATE revisions SET status = ?, status_message = ?, updated_at = ? WHERE id = ? AND status = ?")
        .run(to, message, at, revisionId, from).changes === 1
    );
  }

  /** Moves a revision from `from` to `to`; false when it is no longer in `from` (a newer revision superseded it). */
  move(revisionId: string, from: RevisionStatus, to: RevisionStatus, message: string | null = null): boolean {
    return this.#setStatus(revisionId, from, to, message, this.#iso());
  }

  /** Records what serves a deployment now (or nothing), and which revision it runs. */
  setServing(deploymentId: string, serving: Serving | undefined, activeRevisionId: string | null): void {
    this.#db
      .prepare("UPDATE deployments SET url = ?, pid = ?, active_revision_id = ?, updated_at = ? WHERE id = ?")
      .run(serving?.url ?? null, serving?.pid ?? null, activeRevisionId, this.#iso(), deploymentId);
  }

  serving(deploymentId: string): Serving | undefined {
    const row = this.#db
      .prepare<[string], { url: string | null; pid: number | null }>("SELECT url, pid FROM deployments WHERE id = ?")
      .get(deploymentId);
    return row?.url ? { url: row.url, pid: row.pid ?? undefined } : undefined;
  }

  delete(id: string): void {
    this.#db.transaction(() => {
      this.#db.prepare("DELETE FROM revisions WHERE deployment_id = ?").run(id);
      this.#db.prepare("DELETE FROM deployments WHERE id = ?").run(id);
    })();
  }
}
