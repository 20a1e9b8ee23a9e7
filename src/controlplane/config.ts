import { join } from "node:path";
import * as z from "zod";
import { parseConfig, readYamlFile } from "../config/load.ts";
import { isRecord } from "../protocol/common.ts";
import { Duration, ListenAddress } from "../config/units.ts";
import { ConfigError } from "../errors.ts";
import { LogLevel } from "../log.ts";
import { ApiKeyEntry } from "../http/api-keys.ts";

const Provider = z.strictObject({
  /** Where an authorization code is exchanged for a token (OAuth 2.0 token endpoint). */
  tokenUrl: z.url({ message: "must be a URL" }),
  /** Where the control plane sends a user to install or authorize the app (optional: returned to the caller). */
  authorizeUrl: z.url({ message: "must be a URL" }).optional(),
  clientId: z.string().min(1, { message: "must not be empty" }),
  clientSecret: z.string().min(1, { message: "must not be empty" }).optional(),
  /** The clientSecret from a file (a mounted Secret) instead. */
  clientSecretFile: z.string().min(1).optional(),
});

export const ControlPlaneConfig = z
  .strictObject({
    listen: ListenAddress.prefault("127.0.0.1:8000"),
    dataDir: z.string().min(1).default("./data/controlplane"),
    logLevel: LogLevel.default("info"),
    /** Accepted API keys (X-Api-Key or Bearer); env PLATFORM_API_KEY adds one. Only their SHA-256 is kept in memory. */
    apiKeys: z.array(ApiKeyEntry).default([]),
    deployer: z.enum(["local", "kubernetes"]).default("local"),
    /** The agent servers (either deployer's): what they report to (all optional). */
    agentServer: z
      .strictObject({
        sidecarUrl: z.url({ message: "must be a URL" }).optional(),
        tenantId: z.uuid({ message: "must be a UUID" }).optional(),
        organizationId: z.uuid({ message: "must be a UUID" }).optional(),
        /** How long a deploy waits for the agent server's health check. */
        startTimeout: Duration.prefault("60s"),
        /**
         * PostgreSQL for the agent servers' conversations and tasks. The local deployer connects with it (a role that
         * may create roles) and gives each deployment a role and a schema of its own; the kubernetes deployer passes
         * it on as it is (better: kubernetes.databaseUriSecret). Empty: SQLite in each deployment's data dir.
         */
        databaseUri: z
          .string()
          .regex(/^postgres(ql)?:\/\//, { message: "must be a postgres:// URL" })
          .optional(),
        /**
         * What keeps a deployment's code out of the control plane's files and out of the other deployments' (local
         * deployer; src/controlplane/isolation.ts). auto: user when runAsUidBase is set, else namespace when
         * bubblewrap works here, else the control plane refuses to start. none: only for code you wrote.
         */
        isolation: z.enum(["auto", "user", "namespace", "none"]).default("auto"),
        /**
         * Isolation user: the local deployer runs each deployment's processes as a user of its own, this number plus
         * the deployment's (the control plane must run as root).
         */
        runAsUidBase: z
          .int()
          .min(1000)
          .max(2 ** 31 - 2 ** 24)
          .optional(),
      })
      .prefault({}),
    /** The kubernetes deployer: where it renders each revision's manifests, and for which namespace. */
    kubernetes: z
      .strictObject({
        namespace: z
          .string()
          .regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, {
            message: "must be a namespace name: lower-case letters, digits and '-', at most 63",
          })
          .default("default"),
        /** Empty: <dataDir>/manifests. */
        outputDir: z.string().default(""),
        /** DATABASE_URI from this existing Secret's key rather than written into the manifests (agentServer.databaseUri). */
        databaseUriSecret: z.strictObject({ name: z.string().min(1), key: z.string().min(1) }).optional(),
        /** Pods per deployment; more than one needs a database (agentServer.databaseUri or databaseUriSecret). */
        replicas: z.int().min(1).max(50).default(1),
        /** The graph.json inside every deployed image (the deployer's default: /app/graph.json). */
        graphConfigPath: z
          .string()
          .refine((path) => path.startsWith("/"), { message: "must be an absolute path in the image" })
          .optional(),
      })
      .prefault({}),
    auth: z
      .strictObject({
        providers: z
          .record(
            z.string().regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, { message: "provider ids are lower-case letters, digits, '_' or '-'" }),
            Provider,
          )
          .default({}),
        /** How long an auth request's state is accepted by the setup callback. */
        stateTtl: Duration.prefault("15m"),
      })
      .prefault({}),
  })
  .superRefine((config, ctx) => {
    // Replicas share conversations only through a database: each pod's own data dir would split them.
    if (config.kubernetes.replicas > 1 && !config.agentServer.databaseUri && !config.kubernetes.databaseUriSecret) {
      ctx.addIssue({
        code: "custom",
        path: ["kubernetes", "replicas"],
        message: "more than one replica needs agentServer.databaseUri or kubernetes.databaseUriSecret (PostgreSQL)",
      });
    }
    const { isolation, runAsUidBase } = config.agentServer;
    if (runAsUidBase !== undefined && isolation === "none") {
      ctx.addIssue({
        code: "custom",
        path: ["agentServer", "runAsUidBase"],
        message: "a user per deployment is isolation user, auto or namespace, not none: remove one of the two",
      });
    }
    for (const [id, provider] of Object.entries(config.auth.providers)) {
      if (provider.clientSecret !== undefined && provider.clientSecretFile !== undefined) {
        ctx.addIssue({
          code: "custom",
          path: ["auth", "providers", id, "clientSecret"],
          message: "give clientSecret or clientSecretFile, not both",
        });
      }
    }
  })
  .transform((config) => ({
    ...config,
    kubernetes: { ...config.kubernetes, outputDir: config.kubernetes.outputDir || join(config.dataDir, "manifests") },
  }));
export type ControlPlaneConfig = z.output<typeof ControlPlaneConfig>;

/** Loads config/controlplane.yaml (or embedded defaults); `--listen` beats the file, env PLATFORM_API_KEY adds a key. */
export function loadControlPlaneConfig(
  file: string | undefined,
  env: NodeJS.ProcessEnv,
  overrides: { listen?: string } = {},
): ControlPlaneConfig {
  const raw = readYamlFile(file);
  const merged = isRecord(raw) ? { ...raw, ...(overrides.listen ? { listen: overrides.listen } : {}) } : raw;
  const config = parseConfig(ControlPlaneConfig, merged, file ?? "embedded defaults");
  if (env.PLATFORM_API_KEY) {
    // The same rules as a key in the file: a short or malformed one is a config error now, not a 500 per request.
    const key = ApiKeyEntry.safeParse(env.PLATFORM_API_KEY);
    if (!key.success) throw new ConfigError("env PLATFORM_API_KEY", [`env PLATFORM_API_KEY: ${key.error.issues[0]!.message}`]);
    config.apiKeys.push(key.data);
  }
  return config;
}
