import * as z from "zod";
import { DeploymentType, ResourceSpec } from "./controlplane-resource-spec.ts";

// The deployment control plane's v2 API: one schema per wire shape, used by the server and the CI/CD client.

export const RevisionStatus = z.enum([
  "CREATING",
  "QUEUED",
  "AWAITING_BUILD",
  "BUILDING",
  "AWAITING_DEPLOY",
  "DEPLOYING",
  "DEPLOYED",
  "CREATE_FAILED",
  "BUILD_FAILED",
  "DEPLOY_FAILED",
  "SKIPPED",
  "INTERRUPTED",
  "UNKNOWN",
]);
export type RevisionStatus = z.infer<typeof RevisionStatus>;

/** Statuses a revision never leaves. */
export const FINAL_REVISION_STATUSES: ReadonlySet<RevisionStatus> = new Set([
  "DEPLOYED",
  "CREATE_FAILED",
  "BUILD_FAILED",
  "DEPLOY_FAILED",
  "SKIPPED",
  "INTERRUPTED",
]);
export const FAILED_REVISION_STATUSES: ReadonlySet<RevisionStatus> = new Set(["CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED"]);

export const DeploymentSource = z.enum(["local", "external_docker"]);
export type DeploymentSource = z.infer<typeof DeploymentSource>;

/** The deployment's own status (not its revisions'): LangSmith Deployment's enum. docs/control-plane.md says how ours are reached. */
export const DeploymentStatus = z.enum(["AWAITING_DATABASE", "READY", "UNUSED", "AWAITING_DELETE", "UNKNOWN"]);
export type DeploymentStatus = z.infer<typeof DeploymentStatus>;

/** `null` is "not set", as in the API's own examples (`"image_uri": null`). */
const optional = <T extends z.ZodType>(schema: T) => schema.nullish();

/**
 * What runs, as a request gives it: a graph.json on this machine (source local) or an image (external_docker).
 * `repo_ref` and `source_tarball_path` are the documented fields of LangSmith's other sources: accepted where they
 * fit (docs/control-plane.md), never silently used.
 */
export const SourceRevisionConfigInput = z.strictObject({
  repo_ref: optional(z.string().min(1, { message: "must not be empty" }).max(255)),
  langgraph_config_path: optional(
    z
      .string()
      .min(1, { message: "must not be empty" })
      .refine((path) => path.startsWith("/"), { message: "must be an absolute path to a graph.json" }),
  ),
  image_uri: optional(z.string().min(1, { message: "must not be empty" }).max(512)),
  source_tarball_path: optional(z.string().min(1).max(1024)),
});
export type SourceRevisionConfigInput = z.infer<typeof SourceRevisionConfigInput>;

/** What a revision runs, as stored: only the fields that are set. */
export interface SourceRevisionConfig {
  repo_ref?: string;
  langgraph_config_path?: string;
  image_uri?: string;
  source_tarball_path?: string;
}

/** As answered: every documented field, null when not set. */
export const SourceRevisionConfigAnswer = z.object({
  repo_ref: z.string().nullable(),
  langgraph_config_path: z.string().nullable(),
  image_uri: z.string().nullable(),
  source_tarball_path: z.string().nullable(),
  repo_commit_sha: z.string().nullable(),
});

/** The fields of a request that are set (null and absent alike are "not set"). */
export function setFields<T extends Record<string, unknown>>(value: T): { [K in keyof T]?: Exclude<T[K], null | undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== null && field !== undefined)) as never;
}

/**
 * Settings that need no revision: LangSmith's documented source_config. This control plane records them and uses
 * none (docs/control-plane.md); the ones the docs make immutable cannot change after create.
 */
export const SourceConfigInput = z.strictObject({
  integration_id: optional(z.uuid({ message: "must be a UUID" })),
  repo_url: optional(z.string().max(2048)),
  deployment_type: optional(DeploymentType),
  build_on_push: optional(z.boolean()),
  custom_url: optional(z.string().max(2048)),
  resource_spec: optional(ResourceSpec),
  listener_id: optional(z.uuid({ message: "must be a UUID" })),
  listener_config: optional(z.strictObject({ k8s_namespace: optional(z.string().max(253)) })),
  install_command: optional(z.string().max(4096)),
  build_command: optional(z.string().max(4096)),
});
export const IMMUTABLE_SOURCE_CONFIG = ["integration_id", "repo_url", "deployment_type", "listener_id", "listener_config"] as const;

/** Documented fields this control plane does not support: any non-null value is a 422 that says so. */
const unsupported = (what: string) => z.null({ message: `not supported by this control plane: ${what}` }).optional();

/**
 * Environment variables a deployment's secret may not set: they change how Node, the dynamic loader, glibc or
 * OpenSSL load code and libraries (a secret `NODE_OPTIONS=--import=data:...` would run code in the agent server), or
 * they are the agent server's own settings, which decide where its runs are billed and reported. Matched without
 * regard to case. docs/control-plane.md lists them.
 */
export const RESERVED_SECRET_NAMES: readonly RegExp[] = [
  /^NODE_/, // NODE_OPTIONS, NODE_PATH, NODE_EXTRA_CA_CERTS, NODE_TLS_REJECT_UNAUTHORIZED, ...
  /^(LD|DYLD)_/, // LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, DYLD_INSERT_LIBRARIES, ...
  /^(PATH|HOME|TMPDIR|TMP|TEMP|SHELL|ENV|BASH_ENV|IFS|PWD|USER)$/,
  /^(GCONV_PATH|LOCPATH|NLSPATH|GLIBC_TUNABLES|MALLOC_.*|HOSTALIASES|LOCALDOMAIN|RES_OPTIONS|TZDIR)$/,
  /^(OPENSSL_|SSL_CERT_)/, // OPENSSL_CONF and OPENSSL_MODULES load engines and providers
  /^UV_/, // libuv
  /^(EGRESS_|PLATFORM_(TENANT_ID|ORGANIZATION_ID)$)/, // the agent server's own: its sidecar, and whom its runs are billed to
  /^(DATABASE_URI|DATABASE_SCHEMA|REDIS_URI)$/, // where its conversations live: the control plane's to set, one schema per deployment
];

export const SecretName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, {
    message: "must be an environment variable name: letters, digits and '_', not starting with a digit",
  })
  .refine((name) => !RESERVED_SECRET_NAMES.some((pattern) => pattern.test(name.toUpperCase())), {
    message:
      "is reserved: it changes how the agent server's runtime loads code or libraries, or is one of its own settings (docs/control-plane.md lists the reserved names)",
  });

/** A secret as written: its value never comes back, only its name. */
export const SecretInput = z.strictObject({ name: SecretName, value: z.string().max(65_536, { message: "must be at most 64 KiB" }) });

const Secrets = z
  .array(SecretInput)
  .max(100, { message: "must hold at most 100 secrets" })
  .superRefine((secrets, ctx) => {
    const seen = new Set<string>();
    secrets.forEach((secret, i) => {
      if (seen.has(secret.name)) ctx.addIssue({ code: "custom", path: [i, "name"], message: `duplicate secret name ${secret.name}` });
      seen.add(secret.name);
    });
  });

const DeploymentName = z
  .string()
  .min(1, { message: "must not be empty" })
  .max(100, { message: "must be at most 100 characters" })
  .regex(/^[A-Za-z0-9][A-Za-z0-9 ._-]*$/, { message: "must be letters, digits, spaces, '.', '_' or '-', starting with a letter or digit" });

/**
 * The fields a source needs and the ones it cannot use: local runs a graph.json (a `repo_ref` is recorded, as the
 * docs' CI/CD example sends one), external_docker an image. A field that could not be used is refused, not ignored.
 */
export function sourceRevisionConfigProblems(
  source: DeploymentSource,
  config: SourceRevisionConfig,
): { field: string; msg: string; type: string }[] {
  const needs = source === "local" ? "langgraph_config_path" : "image_uri";
  const problems: { field: string; msg: string; type: string }[] = [];
  if (config[needs] === undefined) problems.push({ field: needs, msg: `Field required for source ${source}`, type: "missing" });
  const unusable = source === "local" ? ["image_uri", "source_tarball_path"] : ["langgraph_config_path", "repo_ref", "source_tarball_path"];
  for (const field of unusable) {
    if (config[field as keyof SourceRevisionConfig] !== undefined)
      problems.push({ field, msg: `must be null for source ${source}: it does not use it`, type: "value_error" });
  }
  return problems;
}

export const DeploymentCreate = z
  .strictObject({
    name: DeploymentName,
    source: DeploymentSource,
    source_config: optional(SourceConfigInput),
    source_revision_config: SourceRevisionConfigInput,
    secrets: optional(Secrets),
    secret_references: unsupported("secret_references (give the values as secrets)"),
  })
  .superRefine((body, ctx) => {
    // The OpenAPI requires both on create; `local`, this control plane's own source, needs neither (docs/control-plane.md).
    if (body.source !== "local") {
      for (const field of ["source_config", "secrets"] as const)
        if (body[field] === undefined || body[field] === null)
          ctx.addIssue({ code: "custom", path: [field], message: `Field required for source ${body.source}` });
    }
    for (const problem of sourceRevisionConfigProblems(body.source, setFields(body.source_revision_config))) {
      ctx.addIssue({ code: "custom", path: ["source_revision_config", problem.field], message: problem.msg });
    }
  });
export type DeploymentCreate = z.infer<typeof DeploymentCreate>;

/**
 * A PATCH: a non-null `source_revision_config` (its set fields over the current ones), `secrets` (the whole set) or
 * `source_config.resource_spec` makes a new revision, also when the values are unchanged: that is how a pipeline
 * rolls out new code at the same path. `name` and `source` cannot change once created.
 */
export const DeploymentPatch = z.strictObject({
  source_config: optional(SourceConfigInput),
  source_revision_config: optional(SourceRevisionConfigInput),
  secrets: optional(Secrets),
  secret_references: unsupported("secret_references (give the values as secrets)"),
  revision_source: unsupported("revision_source (a deployment runs its own source)"),
});
export type DeploymentPatch = z.infer<typeof DeploymentPatch>;

export const Revision = z.object({
  id: z.string(),
  /** Ours, beyond the docs' Revision: which deployment, and why it failed, was skipped or interrupted. */
  deployment_id: z.string(),
  source: DeploymentSource,
  status: RevisionStatus,
  status_message: z.string().nullable(),
  source_revision_config: SourceRevisionConfigAnswer,
  created_at: z.string(),
  updated_at: z.string(),
});
export type Revision = z.infer<typeof Revision>;

export const Deployment = z.object({
  id: z.string(),
  tenant_id: z.string(),
  name: z.string(),
  source: DeploymentSource,
  source_config: z.record(z.string(), z.unknown()),
  source_revision_config: SourceRevisionConfigAnswer,
  /** Names only: values are write-only (the docs' Secret carries a value; ours never comes back). */
  secrets: z.array(z.object({ name: z.string() })),
  secret_references: z.null(),
  image_version: z.string().nullable(),
  latest_revision_id: z.string(),
  /** The revision serving now (the last DEPLOYED one), if any. */
  active_revision_id: z.string().nullable(),
  status: DeploymentStatus,
  /** Ours: the latest revision's status, and the agent server's base URL while a revision serves. */
  latest_revision_status: RevisionStatus,
  url: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Deployment = z.infer<typeof Deployment>;
