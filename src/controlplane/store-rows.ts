import {
  FINAL_REVISION_STATUSES,
  type DeploymentSource,
  type DeploymentStatus,
  type Revision,
  type RevisionStatus,
  type SourceRevisionConfig,
} from "../protocol/controlplane.ts";

// The control plane's tables, and how their rows read as the API's shapes.

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS deployments (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE, name TEXT NOT NULL, source TEXT NOT NULL, source_config TEXT NOT NULL,
  source_revision_config TEXT NOT NULL, secret_names TEXT NOT NULL, secrets_sealed TEXT NOT NULL,
  latest_revision_id TEXT NOT NULL, active_revision_id TEXT, url TEXT, pid INTEGER,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS revisions (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE, deployment_id TEXT NOT NULL, status TEXT NOT NULL, status_message TEXT,
  source_revision_config TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS revisions_by_deployment ON revisions(deployment_id, seq);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

export interface DeploymentRow {
  id: string;
  name: string;
  source: DeploymentSource;
  source_config: string;
  source_revision_config: string;
  secret_names: string;
  secrets_sealed: string;
  latest_revision_id: string;
  active_revision_id: string | null;
  url: string | null;
  pid: number | null;
  created_at: string;
  updated_at: string;
  revision_status: RevisionStatus;
  status: DeploymentStatus;
}

export interface RevisionRow {
  id: string;
  deployment_id: string;
  status: RevisionStatus;
  status_message: string | null;
  source_revision_config: string;
  created_at: string;
  updated_at: string;
  source: DeploymentSource;
}

/** A stored config as answered: every documented field, null when not set (a local source has no commit sha). */
export function answerConfig(text: string): Revision["source_revision_config"] {
  const config = JSON.parse(text) as SourceRevisionConfig;
  return {
    repo_ref: config.repo_ref ?? null,
    langgraph_config_path: config.langgraph_config_path ?? null,
    image_uri: config.image_uri ?? null,
    source_tarball_path: config.source_tarball_path ?? null,
    repo_commit_sha: null,
  };
}

export function toRevision(row: RevisionRow): Revision {
  return {
    id: row.id,
    deployment_id: row.deployment_id,
    source: row.source,
    status: row.status,
    status_message: row.status_message,
    source_revision_config: answerConfig(row.source_revision_config),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * The deployment's own status: READY while a revision serves; AWAITING_DATABASE while its first revision is on its
 * way (the first revision makes the database, in the docs' words); UNKNOWN when nothing serves and the latest
 * revision ended without serving. AWAITING_DELETE and UNUSED are never shown: a DELETE finishes before it answers,
 * and nothing here scales a deployment to zero.
 */
const DEPLOYMENT_STATUS = `CASE
  WHEN d.active_revision_id IS NOT NULL THEN 'READY'
  WHEN r.status IN (${[...FINAL_REVISION_STATUSES].map((status) => `'${status}'`).join(", ")}) THEN 'UNKNOWN'
  ELSE 'AWAITING_DATABASE' END`;

export const SELECT_DEPLOYMENT = `SELECT d.*, r.status AS revision_status, ${DEPLOYMENT_STATUS} AS status
  FROM deployments d JOIN revisions r ON r.id = d.latest_revision_id`;
export const SELECT_REVISION = "SELECT r.*, d.source AS source FROM revisions r JOIN deployments d ON d.id = r.deployment_id";
