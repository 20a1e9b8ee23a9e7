import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { CHART, find, helmTemplate, type Manifest, type Values } from "./helm-render.ts";
import { validatePod } from "./k8s-validate.ts";

const IMAGE = { repository: "registry.test/egress-agent" };
const podSpec = (deployment: Manifest) => (deployment.spec as { template: { spec: Values } }).template.spec;
const podMetadata = (deployment: Manifest) =>
  (deployment.spec as { template: { metadata: { labels: Record<string, string>; annotations: Record<string, string> } } }).template
    .metadata;

const parents: string[] = [];
after(() => {
  for (const dir of parents) rmSync(dir, { recursive: true, force: true });
});

/** test/fixtures/platform-chart with this chart in its charts/, rendered with `values` (the parent's). */
function renderParent(values: Values) {
  const dir = mkdtempSync(join(tmpdir(), "egress-parent-chart-"));
  parents.push(dir);
  cpSync(new URL("../fixtures/platform-chart", import.meta.url).pathname, dir, { recursive: true });
  cpSync(CHART, join(dir, "charts/egress-agent"), { recursive: true });
  return helmTemplate(values, { chart: dir, release: "prod" });
}

test("a platform's chart renders the sidecar as an ordinary container by default and as a native sidecar (restartPolicy Always, startupProbe) with nativeSidecar", () => {
  const ordinary = podSpec(find(renderParent({}), "Deployment", "platform"));
  validatePod(ordinary);
  assert.deepEqual(
    (ordinary.containers as Values[]).map((c) => c.name),
    ["platform", "egress-agent"],
  );
  assert.equal(ordinary.initContainers ?? null, null);
  const sidecar = (ordinary.containers as Values[])[1]!;
  assert.equal(sidecar.restartPolicy, undefined);
  assert.equal(sidecar.startupProbe, undefined);

  const native = podSpec(find(renderParent({ "egress-agent": { nativeSidecar: true } }), "Deployment", "platform"));
  validatePod(native);
  assert.deepEqual(
    (native.containers as Values[]).map((c) => c.name),
    ["platform"],
  );
  const [init] = native.initContainers as Values[];
  assert.equal(init?.name, "egress-agent");
  assert.equal(init.restartPolicy, "Always");
  const startup = init.startupProbe as { exec: { command: string[] }; failureThreshold: number; periodSeconds: number };
  assert.match(startup.exec.command.join(" "), /127\.0\.0\.1:4318\/healthz/);
  assert.ok(startup.failureThreshold * startup.periodSeconds >= 30, "time to open the outbox and verify the license");
});

test("the standalone Deployment keeps one ordinary container whatever nativeSidecar says, and validates", () => {
  for (const nativeSidecar of [false, true]) {
    const spec = podSpec(find(helmTemplate({ image: IMAGE, standalone: { enabled: true }, nativeSidecar }), "Deployment"));
    validatePod(spec);
    assert.equal((spec.containers as Values[])[0]!.restartPolicy, undefined);
  }
});

const DIGEST = `sha256:${"0123456789abcdef".repeat(4)}`;

test("image.digest: the pods run repository@digest, tag unused, standalone and in a platform's chart; the schema refuses a malformed one", () => {
  const image = (pod: Values, name = "egress-agent") => (pod.containers as Values[]).find((c) => c.name === name)!.image;
  const standalone = (extra: Values) =>
    podSpec(find(helmTemplate({ image: { ...IMAGE, ...extra }, standalone: { enabled: true } }), "Deployment"));
  assert.equal(image(standalone({})), "registry.test/egress-agent:0.1.0", "by tag by default");
  const pinned = standalone({ tag: "9.9.9", digest: DIGEST });
  validatePod(pinned);
  assert.equal(image(pinned), `registry.test/egress-agent@${DIGEST}`);
  const parent = podSpec(find(renderParent({ "egress-agent": { image: { digest: DIGEST } } }), "Deployment", "platform"));
  validatePod(parent);
  assert.equal(image(parent), `registry.test/egress-agent@${DIGEST}`);
  for (const digest of ["0123", `sha256:${"A".repeat(64)}`, `sha512:${"0".repeat(64)}`, `registry.test/egress-agent@${DIGEST}`]) {
    assert.throws(
      () => helmTemplate({ image: { ...IMAGE, digest }, standalone: { enabled: true } }),
      /egress-agent\/image\/digest: must match pattern/,
      digest,
    );
  }
});

test("the sidecar needs no /tmp volume: it mounts its config, its data and the license only (the root filesystem read-only)", () => {
  const spec = podSpec(find(helmTemplate({ image: IMAGE, standalone: { enabled: true } }), "Deployment"));
  const [sidecar] = spec.containers as { volumeMounts: { mountPath: string }[]; securityContext: Values }[];
  assert.deepEqual(sidecar!.volumeMounts.map((m) => m.mountPath).sort(), ["/data", "/etc/egress-agent", "/var/run/secrets/egress-agent"]);
  assert.equal(sidecar!.securityContext.readOnlyRootFilesystem, true);
  assert.deepEqual((spec.volumes as { name: string }[]).map((v) => v.name).sort(), [
    "egress-agent-config",
    "egress-agent-data",
    "egress-agent-license",
  ]);
});

test("egress-agent.configChecksum with a parent chart's `.`: the config's sha256, which changes with the config", () => {
  const configChecksum = (values: Values) => {
    const rendered = renderParent(values);
    const file = (find(rendered, "ConfigMap", "prod-egress-agent").data as Record<string, string>)["egress.yaml"]!;
    const annotation = podMetadata(find(rendered, "Deployment", "platform")).annotations["checksum/egress-agent-config"];
    assert.equal(annotation, createHash("sha256").update(file.replace(/\n$/, "")).digest("hex"), "the checksum of the ConfigMap's file");
    return annotation;
  };
  const before = configChecksum({});
  assert.notEqual(configChecksum({ "egress-agent": { beaconUrl: "https://beacon.vendor.example" } }), before);
  assert.notEqual(configChecksum({ "egress-agent": { agent: { logLevel: "debug" } } }), before);
  assert.equal(configChecksum({ "egress-agent": { resources: { limits: { memory: "1Gi" } } } }), before, "not a config change");
});

test("values.schema.json names typos in Kubernetes-typed values (resources, securityContext, probes, env, volumes)", () => {
  const typos: [Values, RegExp][] = [
    [
      { resources: { limit: { memory: "1Gi" } } },
      /egress-agent\/resources: must NOT have additional properties \{"additionalProperty":"limit"\}/,
    ],
    [
      { securityContext: { runAsUSer: 1 } },
      /egress-agent\/securityContext: must NOT have additional properties \{"additionalProperty":"runAsUSer"\}/,
    ],
    [
      { probes: { liveness: { periodSecond: 5 } } },
      /egress-agent\/probes\/liveness: must NOT have additional properties \{"additionalProperty":"periodSecond"\}/,
    ],
    [
      { commonEnv: [{ name: "A", valeu: "1" }] },
      /egress-agent\/commonEnv\/0: must NOT have additional properties \{"additionalProperty":"valeu"\}/,
    ],
    [{ extraVolumes: [{ nmae: "ca", secret: { secretName: "ca" } }] }, /egress-agent\/extraVolumes\/0: must have required property 'name'/],
    [
      { extraVolumes: [{ name: "ca", secret: { secretNmae: "ca" } }] },
      /extraVolumes\/0\/secret: must NOT have additional properties \{"additionalProperty":"secretNmae"\}/,
    ],
    [
      { standalone: { podSecurityContext: { fsgroup: 1 } } },
      /podSecurityContext: must NOT have additional properties \{"additionalProperty":"fsgroup"\}/,
    ],
    [{ securityContext: { runAsUser: "10001" } }, /securityContext\/runAsUser: must be integer/],
  ];
  for (const [values, message] of typos) {
    assert.throws(() => helmTemplate({ image: IMAGE, ...values }), message, JSON.stringify(values));
  }
  // Well-formed Kubernetes values pass.
  helmTemplate({
    image: IMAGE,
    resources: { limits: { memory: "1Gi", cpu: 1 }, requests: { cpu: "100m" } },
    extraVolumes: [{ name: "ca", configMap: { name: "ca-bundle" } }],
    extraVolumeMounts: [{ name: "ca", mountPath: "/etc/ca", readOnly: true }],
    commonEnv: [{ name: "TOKEN", valueFrom: { secretKeyRef: { name: "s", key: "token" } } }],
  });
});

test("env values set with --set as booleans or numbers render as strings, in the list and the map form", () => {
  const env = (values: Values) => {
    const spec = podSpec(find(helmTemplate({ image: IMAGE, standalone: { enabled: true }, ...values }), "Deployment"));
    validatePod(spec);
    return Object.fromEntries(((spec.containers as Values[])[0]!.env as { name: string; value?: unknown }[]).map((e) => [e.name, e.value]));
  };
  const list = env({
    commonEnv: [
      { name: "PHONE_HOME_USAGE_REPORTING_ENABLED", value: false },
      { name: "RETRIES", value: 5 },
    ],
    extraEnv: [{ name: "EMPTY", value: "" }],
  });
  assert.equal(list.PHONE_HOME_USAGE_REPORTING_ENABLED, "false");
  assert.equal(list.RETRIES, "5");
  assert.equal(list.EMPTY, "");
  const map = env({ commonEnv: { PHONE_HOME_USAGE_REPORTING_ENABLED: false, RETRIES: 5 } });
  assert.deepEqual([map.PHONE_HOME_USAGE_REPORTING_ENABLED, map.RETRIES], ["false", "5"]);
});

test("beside the platform, the PodMonitor selects the platform's pods (metrics.podSelector) and the sidecar's metrics port, in either form", () => {
  for (const nativeSidecar of [false, true]) {
    const rendered = renderParent({
      "egress-agent": { nativeSidecar, metrics: { enabled: true, podSelector: { app: "platform" }, podMonitor: { enabled: true } } },
    });
    const deployment = find(rendered, "Deployment", "platform");
    const spec = podSpec(deployment);
    validatePod(spec);
    const sidecar = [...((spec.initContainers as Values[] | null) ?? []), ...(spec.containers as Values[])].find(
      (c) => c.name === "egress-agent",
    )!;
    assert.deepEqual(sidecar.ports, [{ name: "metrics", containerPort: 9464, protocol: "TCP" }]);
    const selector = (find(rendered, "PodMonitor").spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
    assert.deepEqual(selector, { app: "platform" });
    assert.deepEqual(podMetadata(deployment).labels, { app: "platform" });
  }
});

test("the pod template snippet the docs show renders in a platform's chart, in both forms", () => {
  const root = new URL("../../", import.meta.url).pathname;
  const docs = ["README.md", ...readdirSync(join(root, "docs"), { recursive: true }).map((f) => join("docs", String(f)))].filter((f) =>
    f.endsWith(".md"),
  );
  const snippets = docs.flatMap((file) =>
    [...readFileSync(join(root, file), "utf8").matchAll(/```yaml\n([\s\S]*?)```/g)]
      .map((m) => m[1]!)
      .filter((y) => y.includes('include "egress-agent.containers"')),
  );
  assert.ok(snippets.length > 0, "the docs show how a platform's pod template includes the sidecar");
  for (const snippet of snippets) {
    const dir = mkdtempSync(join(tmpdir(), "egress-snippet-chart-"));
    parents.push(dir);
    cpSync(new URL("../fixtures/platform-chart", import.meta.url).pathname, dir, { recursive: true });
    cpSync(CHART, join(dir, "charts/egress-agent"), { recursive: true });
    // The snippet as the platform's Deployment, the platform's own container where the snippet says so.
    const template = snippet
      .replace(/^( *)# \.\.\. the platform's containers \.\.\.$/m, "$1- name: platform\n$1  image: registry.test/platform:1.0.0")
      .replace(/^spec:.*$/m, "spec:\n  selector:\n    matchLabels: {app: platform}");
    writeFileSync(
      join(dir, "templates/deployment.yaml"),
      `apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: platform\n${template}`,
    );
    for (const nativeSidecar of [false, true]) {
      const rendered = helmTemplate({ "egress-agent": { nativeSidecar } }, { chart: dir, release: "prod" });
      const deployment = find(rendered, "Deployment", "platform");
      validatePod(podSpec(deployment));
      const where = nativeSidecar ? "initContainers" : "containers";
      assert.ok(
        ((podSpec(deployment)[where] as Values[] | null) ?? []).some((c) => c.name === "egress-agent"),
        `the sidecar in ${where}`,
      );
      assert.match(podMetadata(deployment).annotations["checksum/egress-agent-config"] ?? "", /^[0-9a-f]{64}$/);
    }
  }
});
