import assert from "node:assert/strict";
import { test } from "node:test";
import { parse } from "yaml";
import { find, helmTemplate, type Manifest, type Values } from "./helm-render.ts";
import { validatePod } from "./k8s-validate.ts";

const IMAGE = { repository: "registry.test/egress-agent" };
const ALL_MONITORING = {
  enabled: true,
  podMonitor: { enabled: true, labels: { release: "prometheus" } },
  serviceMonitor: { enabled: true },
  prometheusRule: { enabled: true },
  dashboard: { enabled: true },
};

/** What every rendered object needs, CRDs included (their schemas are not here offline). */
function assertObject(doc: Manifest, apiVersion: string, kind: string): void {
  assert.equal(doc.apiVersion, apiVersion, kind);
  assert.equal(doc.kind, kind);
  assert.match(doc.metadata.name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, `${kind} metadata.name`);
  assert.ok(doc.metadata.name.length <= 63);
}

const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([key, value]) => labels[key] === value);

test("by default the chart renders no monitoring object, NetworkPolicy or metrics port", () => {
  const rendered = helmTemplate({ image: IMAGE, standalone: { enabled: true } });
  const kinds = rendered.documents.map(({ doc }) => doc.kind).sort();
  assert.deepEqual(kinds, ["ConfigMap", "Deployment", "Pod"], "the helm test pod aside");
  const config = parse((find(rendered, "ConfigMap").data as Record<string, string>)["egress.yaml"]!) as Values;
  assert.equal(config.metrics, undefined, "no listener beyond loopback");
});

test("metrics: the PodMonitor, the Service and ServiceMonitor, the rule and the dashboard select what the chart renders", () => {
  const rendered = helmTemplate({ image: IMAGE, standalone: { enabled: true }, metrics: ALL_MONITORING });
  const deployment = find(rendered, "Deployment");
  const pod = (deployment.spec as { template: { metadata: { labels: Record<string, string> }; spec: { containers: Values[] } } }).template;
  validatePod(pod.spec);
  const container = pod.spec.containers[0]!;
  assert.deepEqual(container.ports, [{ name: "metrics", containerPort: 9464, protocol: "TCP" }]);
  const config = parse((find(rendered, "ConfigMap", "test-egress-agent").data as Record<string, string>)["egress.yaml"]!) as Values;
  assert.deepEqual(config.metrics, { listen: "0.0.0.0:9464" });

  const podMonitor = find(rendered, "PodMonitor");
  assertObject(podMonitor, "monitoring.coreos.com/v1", "PodMonitor");
  const pmSpec = podMonitor.spec as { selector: { matchLabels: Record<string, string> }; podMetricsEndpoints: Values[] };
  assert.ok(matches(pmSpec.selector.matchLabels, pod.metadata.labels), "the PodMonitor selects the sidecar's pods");
  assert.deepEqual(pmSpec.podMetricsEndpoints[0], { port: "metrics", path: "/metrics", interval: "30s" });
  assert.equal((podMonitor.metadata.labels as Record<string, string>).release, "prometheus");

  const service = find(rendered, "Service");
  assertObject(service, "v1", "Service");
  const svcSpec = service.spec as { selector: Record<string, string>; ports: Values[] };
  assert.ok(matches(svcSpec.selector, pod.metadata.labels), "the Service selects the sidecar's pods");
  assert.deepEqual(svcSpec.ports, [{ name: "metrics", port: 9464, targetPort: "metrics", protocol: "TCP" }]);
  const serviceMonitor = find(rendered, "ServiceMonitor");
  assertObject(serviceMonitor, "monitoring.coreos.com/v1", "ServiceMonitor");
  const smSpec = serviceMonitor.spec as { selector: { matchLabels: Record<string, string> }; endpoints: Values[] };
  assert.ok(
    matches(smSpec.selector.matchLabels, service.metadata.labels as Record<string, string>),
    "the ServiceMonitor selects the Service",
  );
  assert.equal(smSpec.endpoints[0]!.port, "metrics");

  const rule = find(rendered, "PrometheusRule");
  assertObject(rule, "monitoring.coreos.com/v1", "PrometheusRule");
  const rules = (rule.spec as { groups: { name: string; rules: Values[] }[] }).groups.flatMap((g) => g.rules);
  assert.deepEqual(
    rules.map((r) => r.alert),
    ["EgressBillingBacklogOld", "EgressDeadLetters", "EgressLicenseGrace", "EgressLicenseInvalid", "EgressDataDirFilling"],
  );
  for (const r of rules) {
    assert.equal(typeof r.expr, "string");
    assert.match(String(r.for), /^\d+[smh]$/);
    assert.ok(["warning", "critical"].includes((r.labels as Values).severity as string));
    assert.ok((r.annotations as Values).summary && (r.annotations as Values).description);
  }

  const dashboard = find(rendered, "ConfigMap", "test-egress-agent-dashboard");
  assert.equal((dashboard.metadata.labels as Record<string, string>).grafana_dashboard, "1");
  const json = JSON.parse((dashboard.data as Record<string, string>)["egress-agent.json"]!) as { uid: string; panels: unknown[] };
  assert.equal(json.uid, "egress-agent");
  assert.ok(json.panels.length > 0);
});

test("metrics: a monitor without the listener fails the render, naming the value", () => {
  assert.throws(
    () => helmTemplate({ image: IMAGE, metrics: { podMonitor: { enabled: true } } }),
    /metrics\.podMonitor\.enabled: needs metrics\.enabled/,
  );
});

test("networkPolicy: egress to DNS, the beacon and the proxy only; in, the metrics port only", () => {
  const rendered = helmTemplate({
    image: IMAGE,
    standalone: { enabled: true },
    metrics: { enabled: true },
    networkPolicy: {
      enabled: true,
      beacon: { cidrs: ["203.0.113.10/32"] },
      proxy: { cidrs: ["10.0.0.5/32"], port: 3128 },
      metricsFrom: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } }],
    },
  });
  const policy = find(rendered, "NetworkPolicy");
  assertObject(policy, "networking.k8s.io/v1", "NetworkPolicy");
  const spec = policy.spec as {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    egress: Values[];
    ingress: Values[];
  };
  const pod = (find(rendered, "Deployment").spec as { template: { metadata: { labels: Record<string, string> } } }).template;
  assert.ok(matches(spec.podSelector.matchLabels, pod.metadata.labels));
  assert.deepEqual(spec.policyTypes, ["Ingress", "Egress"]);
  const [dns, beacon, proxy, ...rest] = spec.egress;
  assert.deepEqual(rest, []);
  assert.deepEqual(dns!.ports, [
    { port: 53, protocol: "UDP" },
    { port: 53, protocol: "TCP" },
  ]);
  assert.deepEqual(beacon, { to: [{ ipBlock: { cidr: "203.0.113.10/32" } }], ports: [{ port: 443, protocol: "TCP" }] });
  assert.deepEqual(proxy, { to: [{ ipBlock: { cidr: "10.0.0.5/32" } }], ports: [{ port: 3128, protocol: "TCP" }] });
  assert.deepEqual(spec.ingress, [
    {
      ports: [{ port: 9464, protocol: "TCP" }],
      from: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } } }],
    },
  ]);
  assert.throws(
    () => helmTemplate({ image: IMAGE, standalone: { enabled: true }, networkPolicy: { enabled: true } }),
    /networkPolicy\.beacon\.cidrs: give the beacon's addresses/,
  );
  assert.throws(
    () => helmTemplate({ image: IMAGE, networkPolicy: { enabled: true, beacon: { cidrs: ["203.0.113.10/32"] } } }),
    /networkPolicy\.enabled: only with standalone\.enabled/,
  );
  // Offline nothing leaves, so nothing is let out, not even DNS.
  const offline = find(
    helmTemplate({ image: IMAGE, standalone: { enabled: true }, offline: { enabled: true }, networkPolicy: { enabled: true } }),
    "NetworkPolicy",
  );
  assert.deepEqual((offline.spec as Values).egress, []);
  assert.deepEqual((offline.spec as Values).ingress, []);
});

test("helm test: a hook pod validates the release's own config and license mounts, and scrapes the metrics Service", () => {
  const rendered = helmTemplate({
    image: IMAGE,
    standalone: { enabled: true },
    metrics: { enabled: true, serviceMonitor: { enabled: true } },
  });
  const pod = find(rendered, "Pod");
  assertObject(pod, "v1", "Pod");
  assert.equal((pod.metadata.annotations as Record<string, string>)["helm.sh/hook"], "test");
  const spec = pod.spec as { restartPolicy: string; containers: Values[]; volumes: Values[] };
  validatePod(spec);
  assert.equal(spec.restartPolicy, "Never");
  const [validate, metrics] = spec.containers;
  assert.deepEqual(validate!.args, ["validate", "--config", "/etc/egress-agent/egress.yaml"]);
  const configMap = spec.volumes.find((v) => v.name === "egress-agent-config")!.configMap as { name: string };
  assert.equal(configMap.name, find(rendered, "ConfigMap").metadata.name, "the release's ConfigMap");
  const license = spec.volumes.find((v) => v.name === "egress-agent-license")!.secret as { secretName: string };
  assert.equal(license.secretName, "egress-agent-license");
  const service = find(rendered, "Service");
  assert.match(String((metrics!.args as string[])[0]), new RegExp(`http://${service.metadata.name}:9464/metrics`));
  assert.equal(helmTemplate({ image: IMAGE, tests: { enabled: false } }).documents.filter(({ doc }) => doc.kind === "Pod").length, 0);
});

test("NOTES.txt shows a platform's chart the includes for both sidecar forms and the checksum, and where metrics are", () => {
  const notes = helmTemplate({ image: IMAGE, metrics: { enabled: true } }).notes;
  assert.match(notes, /checksum\/egress-agent-config: \{\{ include "egress-agent\.configChecksum" \. \}\}/);
  assert.match(notes, /initContainers:\n\s+\{\{- include "egress-agent\.initContainers" \. \| nindent 8 \}\}/);
  assert.match(notes, /containers:\n\s+\{\{- include "egress-agent\.containers" \. \| nindent 8 \}\}/);
  assert.match(notes, /GET \/metrics on the pod's address, port 9464/);
});
