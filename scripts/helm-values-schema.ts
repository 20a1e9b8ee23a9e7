// node scripts/helm-values-schema.ts: writes helm/egress-agent/values.schema.json, which Helm checks values against
// at install (a typo such as `persistance:` or `agent.intervals.flus` fails with the path instead of being ignored).
// `agent:` is the sidecar's config schema itself (zod, src/sidecar/config-schema.ts) less the keys the chart owns, so the
// two cannot drift; test/packaging/helm-chart.test.ts checks that the file is what this writes.
import { writeFileSync } from "node:fs";
import * as z from "zod";
import { AgentConfigFile } from "../src/sidecar/config-schema.ts";
import * as k8s from "./k8s-definitions.ts";

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
  "metrics",
] as const;

const object = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: "object",
  additionalProperties: false,
  properties,
  ...extra,
});
const string = { type: "string" };
const boolean = { type: "boolean" };
/** A Kubernetes object passed through as is (annotations, node selectors): its own API validates it. */
const kubernetes = { type: "object" };
const nullableBoolean = { type: ["boolean", "null"] };
const labels = { type: "object", additionalProperties: string };
const listOf = (items: unknown) => ({ type: "array", items });
/** Env entries: a list of EnvVars (a value set with --set as a number or boolean is rendered as a string), or a map of name to a value or to {valueFrom}. */
const env = {
  anyOf: [
    listOf({
      ...k8s.EnvVar,
      properties: { ...(k8s.EnvVar.properties as object), value: { type: ["string", "number", "boolean", "null"] } },
    }),
    {
      type: "object",
      additionalProperties: {
        anyOf: [
          { type: ["string", "number", "boolean"] },
          { type: "object", additionalProperties: false, required: ["valueFrom"], properties: { valueFrom: k8s.EnvVarSource } },
        ],
      },
    },
    { type: "null" },
  ],
};
const labelSelector = object({ matchLabels: labels, matchExpressions: listOf(kubernetes) });
const networkPolicyPeer = object({
  ipBlock: object({ cidr: string, except: listOf(string) }, { required: ["cidr"] }),
  namespaceSelector: labelSelector,
  podSelector: labelSelector,
});
const monitor = object({ enabled: boolean, interval: string, labels });

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
      image: object({
        repository: string,
        tag: { type: ["string", "number"] },
        // "" or a manifest digest, which pins the image and wins over tag.
        digest: { type: "string", pattern: "^(sha256:[0-9a-f]{64})?$" },
        pullPolicy: { enum: ["Always", "IfNotPresent", "Never"] },
      }),
      imagePullSecrets: listOf(k8s.LocalObjectReference),
      nativeSidecar: boolean,
      beaconUrl: string,
      instanceVersion: string,
      config: object({ telemetry: object({ logs: nullableBoolean, metrics: nullableBoolean, traces: nullableBoolean }) }),
      commonEnv: env,
      extraEnv: env,
      license: object({ existingSecret: string, secretKey: string }),
      offline: object({ enabled: boolean, licenseSecret: string, licenseSecretKey: string, publicKeySecretKey: string }),
      agent: { ...agent, default: undefined },
      extraVolumes: listOf(k8s.Volume),
      extraVolumeMounts: listOf(k8s.VolumeMount),
      persistence: object({
        enabled: boolean,
        claimTemplate: boolean,
        existingClaim: string,
        storageClass: string,
        accessModes: { type: "array", items: string },
        size: { type: ["string", "number"] },
      }),
      resources: k8s.ResourceRequirements,
      securityContext: k8s.SecurityContext,
      probes: object({ startup: k8s.ProbeTiming, liveness: k8s.ProbeTiming, readiness: k8s.ProbeTiming }),
      standalone: object({
        enabled: boolean,
        podAnnotations: kubernetes,
        podSecurityContext: k8s.PodSecurityContext,
        terminationGracePeriodSeconds: { type: "integer", minimum: 0 },
        nodeSelector: kubernetes,
        tolerations: listOf(k8s.Toleration),
        affinity: k8s.Affinity,
      }),
      metrics: object({
        enabled: boolean,
        port: { type: "integer", minimum: 1, maximum: 65535 },
        podSelector: labels,
        podMonitor: monitor,
        serviceMonitor: monitor,
        prometheusRule: object({
          enabled: boolean,
          labels,
          billingBacklogAgeSeconds: { type: "number", exclusiveMinimum: 0 },
          dataDirFreeRatio: { type: "number", exclusiveMinimum: 0, maximum: 1 },
        }),
        dashboard: object({ enabled: boolean, labels, annotations: labels }),
      }),
      networkPolicy: object({
        enabled: boolean,
        dns: object({ to: listOf(networkPolicyPeer) }),
        beacon: object({ cidrs: listOf(string), port: { type: "integer", minimum: 1, maximum: 65535 } }),
        proxy: object({ cidrs: listOf(string), port: { type: "integer", minimum: 1, maximum: 65535 } }),
        metricsFrom: listOf(networkPolicyPeer),
      }),
      tests: object({ enabled: boolean }),
    }),
  };
}

export const SCHEMA_PATH = new URL("../helm/egress-agent/values.schema.json", import.meta.url).pathname;
export const schemaText = (): string => `${JSON.stringify(valuesSchema(), null, 2)}\n`;

if (import.meta.url === `file://${process.argv[1]}`) writeFileSync(SCHEMA_PATH, schemaText());
