import * as z from "zod";

// source_config's typed fields as the control plane's OpenAPI (0.1.0) declares them: `deployment_type` is one of its
// enum, `resource_spec` holds its documented fields within their bounds. docs/control-plane.md says
// which of them this control plane uses (none: they are recorded).

/** The OpenAPI's `deployment_type` enum (SourceConfigRequest, and the list filter). */
export const DeploymentType = z.enum(["dev_free", "dev", "prod"], { message: "must be one of dev_free, dev, prod" });

const nullable = <T extends z.ZodType>(schema: T) => schema.nullish();
/** CPU cores: the OpenAPI's bounds where it gives them (a request 0.1-8, a limit 0.1-16), else above zero. */
const cores = (max?: number) => {
  const positive = z.number({ message: "must be a number of CPU cores" }).positive({ message: "must be above 0" });
  return nullable(
    max === undefined ? positive : positive.min(0.1, { message: "must be at least 0.1" }).max(max, { message: `must be at most ${max}` }),
  );
};
/** Replicas: a whole number, none below zero. */
const replicas = nullable(z.int({ message: "must be a whole number" }).min(0, { message: "must not be negative" }));
/** A whole number above zero (MB of memory, GiB of storage, connections). */
const count = nullable(z.int({ message: "must be a whole number" }).min(1, { message: "must be at least 1" }));
const stringMap = nullable(z.record(z.string(), z.string({ message: "must be a string" })));
/** Kubernetes objects the docs let a spec add to the pods: not applied here, so refused rather than silently kept. */
const unsupported = nullable(z.null({ message: "not supported by this control plane: it adds nothing to the agent servers it runs" }));

/** One component's documented fields: CPU and memory (request and limit), and for some its replicas. */
const component = (prefix: string, options: { scale: boolean; bounded: boolean }) => ({
  ...(options.scale && { [`${prefix}min_scale`]: replicas, [`${prefix}max_scale`]: replicas }),
  [`${prefix}cpu`]: cores(options.bounded ? 8 : undefined),
  [`${prefix}cpu_limit`]: cores(options.bounded ? 16 : undefined),
  [`${prefix}memory_mb`]: count,
  [`${prefix}memory_limit_mb`]: count,
});
const COMPONENTS = {
  "": { scale: true, bounded: true },
  queue_: { scale: true, bounded: true },
  orchestrator_: { scale: true, bounded: false },
  executor_: { scale: false, bounded: false },
  redis_: { scale: false, bounded: true },
  db_: { scale: false, bounded: false },
} as const;

/**
 * The OpenAPI's ResourceSpec: its documented fields only (another is a 422 naming it), each of its type and within
 * its bounds; a request or limit pair whose limit is below its request, or a min_scale above max_scale, is refused.
 */
export const ResourceSpec = z
  .strictObject({
    ...Object.fromEntries(Object.entries(COMPONENTS).flatMap(([prefix, options]) => Object.entries(component(prefix, options)))),
    db_storage_gi: count,
    db_max_connections: count,
    labels: stringMap,
    annotations: stringMap,
    service_account_name: nullable(z.string().min(1).max(253)),
    image_pull_secrets: unsupported,
    volumes: unsupported,
    volume_mounts: unsupported,
    init_containers: unsupported,
    sidecars: unsupported,
  })
  .superRefine((spec, ctx) => {
    const value = (key: string) => (spec as Record<string, unknown>)[key];
    for (const prefix of Object.keys(COMPONENTS)) {
      const pairs = [
        ["min_scale", "max_scale"],
        ["cpu", "cpu_limit"],
        ["memory_mb", "memory_limit_mb"],
      ] as const;
      for (const [low, high] of pairs) {
        const [lo, hi] = [value(prefix + low), value(prefix + high)];
        if (typeof lo === "number" && typeof hi === "number" && hi < lo)
          ctx.addIssue({ code: "custom", path: [prefix + high], message: `must not be below ${prefix + low} (${lo})` });
      }
    }
  });
