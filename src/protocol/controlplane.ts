import * as z from "zod";

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
export const FINAL_REVISION_STATUSES: ReadonlySet<RevisionStatus> = new Set(["DEPLOYED", "CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED", "SKIPPED", "INTERRUPTED"]);
export const FAILED_REVISION_STATUSES: ReadonlySet<RevisionStatus> = new Set(["CREATE_FAILED", "BUILD_FAILED", "DEPLOY_FAILED"]);

export const DeploymentSource = z.enum(["local", "external_docker"]);
export type DeploymentSource = z.infer<typeof DeploymentSource>;

/** What runs: a graph.json on this machine (local), or an image (external_docker). */
export const SourceRevisionConfig = z.strictObject({
  langgraph_config_path: z
    .string()
    .min(1, { message: "must not be empty" })
    .refine((path) => path.startsWith("/"), { message: "must be an absolute path to a graph.json" })
    .optional(),
  image_uri: z.string().min(1, { message: "must not be empty" }).max(512).optional(),
});
export type SourceRevisionConfig = z.infer<typeof SourceRevisionConfig>;

/**
 * Environment variables a deployment's secret may not set: they change how Node, the dynamic loader, glibc or
 * OpenSSL load code and libraries (a secret `NODE_OPTIONS=--import=data:...` would run code in the agent server), or
 * they are the agent server's own settings, which decide where its runs are billed and reported. Matched without
 * regard to case. README "The deployment control plane" lists them.
 */
export const RESERVED_SECRET_NAMES: readonly RegExp[] = [
  /^NODE_/, // NODE_OPTIONS, NODE_PATH, NODE_EXTRA_CA_CERTS, NODE_TLS_REJECT_UNAUTHORIZED, ...
  /^(LD|DYLD)_/, // LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, DYLD_INSERT_LIBRARIES, ...
  /^(PATH|HOME|TMPDIR|TMP|TEMP|SHELL|ENV|BASH_ENV|IFS|PWD|USER)$/,
  /^(GCONV_PATH|LOCPATH|NLSPATH|GLIBC_TUNABLES|MALLOC_.*|HOSTALIASES|LOCALDOMAIN|RES_OPTIONS|TZDIR)$/,
  /^(OPENSSL_|SSL_CERT_)/, // OPENSSL_CONF and OPENSSL_MODULES load engines and providers
  /^UV_/, // libuv
  /^(EGRESS_|PLATFORM_(TENANT_ID|ORGANIZATION_ID)$)/, // the agent server's own: its sidecar, and whom its runs are billed to
];

export const SecretName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, { message: "must be an environment variable name: letters, digits and '_', not starting with a digit" })
  .refine((name) => !RESERVED_SECRET_NAMES.some((pattern) => pattern.test(name.toUpperCase())), {
    message: "is reserved: it changes how the agent server's runtime loads code or libraries, or is one of its own settings (README lists the reserved names)",
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

/** The config a source needs: local names a graph.json, external_docker an image. */
function requireSourceConfig(source: DeploymentSource, config: SourceRevisionConfig | undefined, ctx: z.RefinementCtx): void {
  const key = source === "local" ? "langgraph_config_path" : "image_uri";
  if (config?.[key] === undefined) ctx.addIssue({ code: "custom", path: ["source_revision_config", key], message: `Field required for source ${source}` });
}

export const DeploymentCreate = z
  .strictObject({
    name: DeploymentName,
    source: DeploymentSource,
    source_config: z.record(z.string(), z.unknown()).optional(),
    source_revision_config: SourceRevisionConfig,
    secrets: Secrets.default([]),
  })
  .superRefine((body, ctx) => requireSourceConfig(body.source, body.source_revision_config, ctx));
export type DeploymentCreate = z.infer<typeof DeploymentCreate>;

export const DeploymentPatch = z.strictObject({
  name: DeploymentName.optional(),
  source_revision_config: SourceRevisionConfig.optional(),
  /** Replaces the whole set: names not listed are removed. */
  secrets: Secrets.optional(),
});
export type DeploymentPatch = z.infer<typeof DeploymentPatch>;

export const Revision = z.object({
  id: z.string(),
  deployment_id: z.string(),
  status: RevisionStatus,
  /** Why a revision failed, was skipped or interrupted. */
  status_message: z.string().nullable(),
  source_revision_config: SourceRevisionConfig,
  created_at: z.string(),
  updated_at: z.string(),
});
export type Revision = z.infer<typeof Revision>;

export const Deployment = z.object({
  id: z.string(),
  name: z.string(),
  source: DeploymentSource,
  source_config: z.record(z.string(), z.unknown()),
  source_revision_config: SourceRevisionConfig,
  /** Names only: values are write-only. */
  secrets: z.array(z.object({ name: z.string() })),
  latest_revision_id: z.string(),
  /** The revision serving now (the last DEPLOYED one), if any. */
  active_revision_id: z.string().nullable(),
  /** The latest revision's status. */
  status: RevisionStatus,
  /** The agent server's base URL while a revision serves. */
  url: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Deployment = z.infer<typeof Deployment>;

export const Page = <T extends z.ZodType>(item: T) => z.object({ resources: z.array(item), offset: z.int() });

const Limit = z.coerce.number({ message: "must be an integer" }).int({ message: "must be an integer" }).min(1, { message: "must be at least 1" }).max(100, { message: "must be at most 100" }).default(20);
const Offset = z.coerce.number({ message: "must be an integer" }).int({ message: "must be an integer" }).min(0, { message: "must not be negative" }).default(0);

export const ListQuery = z.looseObject({ limit: Limit, offset: Offset });
export const DeploymentListQuery = z.looseObject({
  limit: Limit,
  offset: Offset,
  name_contains: z.string().max(100).optional(),
  status: RevisionStatus.optional(),
});

/** GET /v2/auth/setup/{provider_id}: what the provider's redirect carries. */
export const SetupCallbackQuery = z.looseObject({
  code: z.string().optional(),
  state: z.string().optional(),
  setup_action: z.string().optional(),
  // Decimal digits only: z.coerce would take "" as 0 and "0x1f" or "1e3" as numbers.
  installation_id: z
    .string()
    .regex(/^-?\d{1,15}$/, { message: "Input should be a valid integer, unable to parse string as an integer" })
    .transform(Number)
    .optional(),
  error: z.string().optional(),
  error_description: z.string().optional(),
});
export type SetupCallbackQuery = z.infer<typeof SetupCallbackQuery>;

/**
 * An auth request: POST /v2/auth/providers/{provider_id}/auth-requests answers it with where to send the user and
 * the state the callback must bring back. Only that answer carries `state` and `authorize_url` (which holds the
 * state): the control plane keeps a hash of the state's secret part, so GET answers null for both.
 */
export const AuthRequest = z.object({
  auth_id: z.string(),
  provider_id: z.string(),
  state: z.string().nullable(),
  authorize_url: z.string().nullable(),
  /** expired: still pending when expires_at passed (its state is refused). */
  status: z.enum(["pending", "completed", "failed", "expired"]),
  /** Why a failed request failed (the provider's error code, or the token exchange's failure). */
  error: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
});
export type AuthRequest = z.infer<typeof AuthRequest>;

export const Installation = z.object({
  id: z.string(),
  provider_id: z.string(),
  installation_id: z.int().nullable(),
  auth_id: z.string(),
  created_at: z.string(),
});
export type Installation = z.infer<typeof Installation>;
