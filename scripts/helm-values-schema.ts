// node scripts/helm-values-schema.ts: writes helm/egress-agent/values.schema.json, which Helm checks values against
// at install (a typo such as `persistance:` or `agent.intervals.flus` fails with the path instead of being ignored).
// `agent:` is the sidecar's config schema itself (zod, src/agent/config-schema.ts) less the keys the chart owns, so the
// two cannot drift; test/packaging/helm-chart.test.ts checks that the file is what this writes.
import { writeFileSync } from "node:fs";
import * as z from "zod";
import { AgentConfigFile } from "../src/agent/config-schema.ts";

/** Keys of egress.yaml that the chart writes itself (templates/_helpers.tpl refuses them under agent:). */
export const CHART_OWNED = [
  "listen",
  "dataDir",
  "licenseKey",
  "licenseKeyFile",
  "offline",
  "beaconUrl",
  "instanceVersion",
  "config",
] as const;

const object = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: "object",
  additionalProperties: false,
  properties,
  ...extra,
});
const string = { type: "string" };
const boolean = { type: "boolean" };
/** A Kubernetes object passed through as is (resources, securityContext, affinity, ...): its own API validates it. */
const kubernetes = { type: "object" };
const list = { type: "array" };
const nullableBoolean = { type: ["boolean", "null"] };
/** Env entries: a list of EnvVars, or a map of name to a value or to an EnvVar's valueFrom. */
const env = {
  anyOf: [
    { type: "array", items: { type: "object", required: ["name"], properties: { name: string } } },
    {
      type: "object",
      additionalProperties: { anyOf: [{ type: ["string", "number", "boolean"] }, { type: "object", required: ["valueFrom"] }] },
    },
    { type: "null" },
  ],
};

export function valuesSchema(): Record<string, unknown> {
  const agent = z.toJSONSchema(AgentConfigFile.omit(Object.fromEntries(CHART_OWNED.map((key) => [key, true])) as never), {
    io: "input",
    target: "draft-7",
    unrepresentable: "any",
  }) as Record<string, unknown>;
  delete agent.$schema;
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    title: "egress-agent chart values",
    ...object({
      // Helm passes a parent chart's globals to every dependency.
      global: kubernetes,
      nameOverride: string,
      fullnameOverride: string,
      image: object({ repository: string, tag: { type: ["string", "number"] }, pullPolicy: { enum: ["Always", "IfNotPresent", "Never"] } }),
      imagePullSecrets: list,
      beaconUrl: string,
      instanceVersion: string,
      config: object({ telemetry: object({ logs: nullableBoolean, metrics: nullableBoolean, traces: nullableBoolean }) }),
      commonEnv: env,
      extraEnv: env,
      license: object({ existingSecret: string, secretKey: string }),
      offline: object({ enabled: boolean, licenseSecret: string, licenseSecretKey: string, publicKeySecretKey: string }),
      agent: { ...agent, default: undefined },
      extraVolumes: list,
      extraVolumeMounts: list,
      persistence: object({
        enabled: boolean,
        claimTemplate: boolean,
        existingClaim: string,
        storageClass: string,
        accessModes: { type: "array", items: string },
        size: { type: ["string", "number"] },
      }),
      tmp: object({ sizeLimit: { type: ["string", "number"] } }),
      resources: kubernetes,
      securityContext: kubernetes,
      probes: object({ liveness: kubernetes, readiness: kubernetes }),
      standalone: object({
        enabled: boolean,
        podAnnotations: kubernetes,
        podSecurityContext: kubernetes,
        terminationGracePeriodSeconds: { type: "integer", minimum: 0 },
        nodeSelector: kubernetes,
        tolerations: list,
        affinity: kubernetes,
      }),
    }),
  };
}

export const SCHEMA_PATH = new URL("../helm/egress-agent/values.schema.json", import.meta.url).pathname;
export const schemaText = (): string => `${JSON.stringify(valuesSchema(), null, 2)}\n`;

if (import.meta.url === `file://${process.argv[1]}`) writeFileSync(SCHEMA_PATH, schemaText());
