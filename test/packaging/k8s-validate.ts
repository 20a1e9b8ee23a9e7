// A rendered pod spec checked against the Kubernetes definitions (scripts/k8s-definitions.ts) and the API server's
// rules for native sidecars: what `kubectl apply` would refuse fails here.
import assert from "node:assert/strict";
import { Ajv } from "ajv";
import * as k8s from "../../scripts/k8s-definitions.ts";

type Values = Record<string, unknown>;

const ajv = new Ajv({ allErrors: true, strict: false });
const podSpec = ajv.compile(k8s.PodSpec);

/** The pod spec's containers and volumes against the Kubernetes definitions, and the API server's sidecar rules. */
export function validatePod(spec: Values): void {
  const problems: string[] = [];
  const containers = (spec.containers ?? []) as Values[];
  const init = (spec.initContainers ?? []) as Values[];
  if (!podSpec(spec)) problems.push(...podSpec.errors!.map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`));
  for (const [i, item] of containers.entries()) {
    if (item.restartPolicy !== undefined) problems.push(`/containers/${i}/restartPolicy: only an init container may have one`);
  }
  for (const [i, item] of init.entries()) {
    if (item.restartPolicy !== "Always" && (item.startupProbe || item.livenessProbe || item.readinessProbe))
      problems.push(`/initContainers/${i}: probes only on a restartable (native sidecar) init container`);
  }
  const volumes = (spec.volumes ?? []) as Values[];
  const names = new Set(volumes.map((v) => v.name));
  for (const item of [...containers, ...init]) {
    for (const mount of (item.volumeMounts ?? []) as Values[])
      if (!names.has(mount.name)) problems.push(`mount ${String(mount.name)}: no such volume`);
  }
  assert.deepEqual(problems, []);
}
