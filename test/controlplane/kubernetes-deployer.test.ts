import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import pino from "pino";
import { parseAllDocuments, stringify } from "yaml";
import type { DeployTarget } from "../../src/controlplane/deployer.ts";
import { imageReferenceProblem, KubernetesDeployer } from "../../src/controlplane/kubernetes-deployer.ts";
import { startService, tempDir, waitFor } from "../helpers/processes.ts";

// The kubernetes deployer renders manifests (no cluster here): checked as a kubectl would read them, then once through
// the real control plane process.

const IMAGE = "registry.example.com/agents/notes:1.2.3";
const DNS_1123_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function newDeployer(agentServer = {}) {
  const outputDir = tempDir("kubernetes-deployer-");
  dirs.push(outputDir);
  return {
    deployer: new KubernetesDeployer({ outputDir, namespace: "agents", agentServer, logger: pino({ level: "silent" }) }),
    outputDir,
  };
}

function target(image: string | null = IMAGE, secrets: Record<string, string> = {}): DeployTarget {
  return {
    deploymentId: randomUUID(),
    revisionId: randomUUID(),
    source: "external_docker",
    sourceRevisionConfig: image === null ? {} : { image_uri: image },
    secrets,
    ordinal: 1,
  };
}

/** The file's documents as kubectl reads them, by kind. */
function manifests(path: string): Record<string, any> {
  const text = readFileSync(path, "utf8");
  assert.doesNotMatch(text, /: [&*]\w/, "no YAML anchors or aliases");
  const docs = parseAllDocuments(text);
  for (const doc of docs) assert.deepEqual(doc.errors, []);
  const objects = docs.map((doc) => doc.toJS());
  assert.deepEqual(
    objects.map((o) => o.kind),
    ["Secret", "Deployment", "Service"],
  );
  return Object.fromEntries(objects.map((o) => [o.kind, o]));
}

test("deploy renders a Secret, a Deployment and a Service, owner-only, and returns the Service's URL", async () => {
  const [tenantId, organizationId] = [randomUUID(), randomUUID()];
  const { deployer, outputDir } = newDeployer({ sidecarUrl: "http://egress-agent.platform.svc:4318", tenantId, organizationId });
  const deployment = target(IMAGE, { OPENAI_API_KEY: "sk-test-value-1", MULTI: "line one\nline two" });
  await deployer.create(deployment);
  await deployer.build(deployment);
  const serving = await deployer.deploy(deployment, undefined);

  const dir = join(outputDir, deployment.deploymentId);
  const file = join(dir, `${deployment.revisionId}.yaml`);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(statSync(join(dir, "current.yaml")).mode & 0o777, 0o600);
  assert.equal(readFileSync(join(dir, "current.yaml"), "utf8"), readFileSync(file, "utf8"));

  const { Secret, Deployment, Service } = manifests(file);
  const name = `agent-${deployment.deploymentId}`;
  for (const object of [Secret, Deployment, Service]) {
    assert.equal(object.metadata.namespace, "agents");
    assert.equal(object.metadata.labels["app.kubernetes.io/instance"], name);
    assert.equal(object.metadata.labels["egress-agent/deployment-id"], deployment.deploymentId);
  }
  for (const objectName of [Deployment.metadata.name, Service.metadata.name]) {
    assert.equal(objectName, name);
    assert.match(objectName, DNS_1123_LABEL);
  }
  assert.equal(serving.url, `http://${name}.agents.svc.cluster.local:2024`);
  assert.equal(serving.pid, undefined);

  // The secret values are in the Secret only.
  assert.deepEqual(Secret.stringData, { OPENAI_API_KEY: "sk-test-value-1", MULTI: "line one\nline two" });
  const withoutSecret = stringify([Deployment, Service]);
  assert.ok(!withoutSecret.includes("sk-test-value-1"));

  assert.equal(Deployment.spec.replicas, 1);
  assert.deepEqual(Deployment.spec.selector.matchLabels, Service.spec.selector);
  const pod = Deployment.spec.template;
  assert.equal(pod.metadata.annotations["egress-agent/revision-id"], deployment.revisionId);
  for (const [key, value] of Object.entries(Deployment.spec.selector.matchLabels)) assert.equal(pod.metadata.labels[key], value);
  assert.equal(pod.spec.automountServiceAccountToken, false);
  assert.deepEqual(pod.spec.securityContext, {
    runAsNonRoot: true,
    runAsUser: 10001,
    runAsGroup: 10001,
    fsGroup: 10001,
    seccompProfile: { type: "RuntimeDefault" },
  });
  assert.deepEqual(
    pod.spec.volumes.map((v: any) => [v.name, "emptyDir" in v]),
    [
      ["data", true],
      ["tmp", true],
    ],
  );

  const [container] = pod.spec.containers;
  assert.equal(container.image, IMAGE);
  assert.deepEqual(container.args, [
    ...["a2a", "serve", "--config", "/app/graph.json", "--listen", "0.0.0.0:2024", "--data-dir", "/data"],
    ...["--sidecar-url", "http://egress-agent.platform.svc:4318", "--tenant-id", tenantId, "--organization-id", organizationId],
  ]);
  assert.equal(container.command, undefined, "the image's ENTRYPOINT (egress-agent) runs");
  assert.deepEqual(container.envFrom, [{ secretRef: { name: Secret.metadata.name } }]);
  assert.equal(container.env, undefined);
  assert.deepEqual(container.ports, [{ name: "http", containerPort: 2024, protocol: "TCP" }]);
  assert.deepEqual(container.livenessProbe.httpGet, { path: "/ok", port: "http" });
  assert.deepEqual(container.readinessProbe.httpGet, { path: "/readyz", port: "http" }, "not ready while its database is away");
  assert.deepEqual(container.volumeMounts.map((m: any) => m.mountPath).sort(), ["/data", "/tmp"]);
  assert.ok(container.resources.requests.cpu && container.resources.requests.memory && container.resources.limits.memory);
  const security = container.securityContext;
  assert.equal(security.runAsNonRoot, true);
  assert.equal(security.runAsUser, 10001);
  assert.equal(security.readOnlyRootFilesystem, true);
  assert.equal(security.allowPrivilegeEscalation, false);
  assert.deepEqual(security.capabilities, { drop: ["ALL"] });
  assert.deepEqual(security.seccompProfile, { type: "RuntimeDefault" });

  assert.equal(Service.spec.type, "ClusterIP");
  assert.deepEqual(Service.spec.ports, [{ name: "http", port: 2024, targetPort: "http", protocol: "TCP" }]);
});

test("without a sidecar the args stop at --data-dir; graphConfigPath names the graph.json in the image", async () => {
  const outputDir = tempDir("kubernetes-deployer-");
  dirs.push(outputDir);
  const deployer = new KubernetesDeployer({
    outputDir,
    namespace: "default",
    graphConfigPath: "/deps/notes/graph.json",
    agentServer: {},
    logger: pino({ level: "silent" }),
  });
  const deployment = target();
  await deployer.create(deployment);
  await deployer.deploy(deployment, undefined);
  const { Deployment } = manifests(join(outputDir, deployment.deploymentId, "current.yaml"));
  assert.deepEqual(Deployment.spec.template.spec.containers[0].args, [
    "a2a",
    "serve",
    "--config",
    "/deps/notes/graph.json",
    "--listen",
    "0.0.0.0:2024",
    "--data-dir",
    "/data",
  ]);
  assert.deepEqual(manifests(join(outputDir, deployment.deploymentId, "current.yaml")).Secret.stringData, {});
});

test("a new revision writes its own file, and current.yaml rolls the pods with its revision annotation", async () => {
  const { deployer, outputDir } = newDeployer();
  const first = target();
  await deployer.create(first);
  const serving = await deployer.deploy(first, undefined);
  const second = {
    ...first,
    revisionId: randomUUID(),
    sourceRevisionConfig: { image_uri: `registry.example.com/agents/notes@sha256:${"ab".repeat(32)}` },
    secrets: { TOKEN: "rotated" },
  };
  assert.deepEqual(await deployer.deploy(second, serving), serving, "the URL stays the Service's");

  const dir = join(outputDir, first.deploymentId);
  const old = manifests(join(dir, `${first.revisionId}.yaml`));
  const current = manifests(join(dir, "current.yaml"));
  assert.deepEqual(manifests(join(dir, `${second.revisionId}.yaml`)), current);
  const annotation = (m: Record<string, any>) => m.Deployment.spec.template.metadata.annotations["egress-agent/revision-id"];
  assert.equal(annotation(old), first.revisionId);
  assert.equal(annotation(current), second.revisionId);
  assert.equal(current.Deployment.spec.template.spec.containers[0].image, second.sourceRevisionConfig.image_uri);
  assert.deepEqual(current.Secret.stringData, { TOKEN: "rotated" });
  assert.equal(current.Deployment.metadata.name, old.Deployment.metadata.name);
});

test("create refuses source local and a missing image; build refuses a malformed image reference", async () => {
  const { deployer } = newDeployer();
  await assert.rejects(
    deployer.create({ ...target(), source: "local", sourceRevisionConfig: { langgraph_config_path: "/x/graph.json" } }),
    {
      name: "DeployerError",
      message: /source "external_docker" only, not "local"/,
    },
  );
  await assert.rejects(deployer.create(target(null)), { name: "DeployerError", message: /image_uri is required/ });
  await assert.rejects(deployer.create({ ...target(), deploymentId: "../escape" }), {
    name: "DeployerError",
    message: /cannot name Kubernetes objects/,
  });
  for (const bad of [
    "registry.example.com/agents/notes",
    "Registry/Notes:1",
    "notes:bad tag",
    "notes@sha256:abc",
    "reg istry.example.com/notes:1",
    "/notes:1",
    "notes:",
  ]) {
    await assert.rejects(deployer.build(target(bad)), { name: "DeployerError", message: /is not an image reference/ }, bad);
  }
});

test("image references: registry with port, nested paths, tags and digests", () => {
  const digest = `sha256:${"0123456789abcdef".repeat(4)}`;
  for (const good of [
    IMAGE,
    "notes:1",
    "localhost:5000/notes:dev",
    "ghcr.io/org/team/notes:v1.2.3-rc.1",
    `ghcr.io/org/notes@${digest}`,
    `ghcr.io/org/notes:1@${digest}`,
    "my-registry:5000/a__b/c.d:latest",
  ]) {
    assert.equal(imageReferenceProblem(good), undefined, good);
  }
  assert.match(imageReferenceProblem("ghcr.io/org/notes")!, /neither a tag nor a digest/);
  assert.match(imageReferenceProblem(`notes@sha256:${"A".repeat(64)}`)!, /digest/);
  assert.match(imageReferenceProblem(`notes:${"x".repeat(129)}`)!, /tag/);
});

test("alive while current.yaml is there; stop removes the deployment's directory", async () => {
  const { deployer, outputDir } = newDeployer();
  const deployment = target();
  await deployer.create(deployment);
  const serving = await deployer.deploy(deployment, undefined);
  assert.equal(await deployer.alive(serving), true);
  assert.equal(await deployer.alive({ url: serving.url.replace(".agents.", ".other.") }), false, "another namespace's");
  assert.equal(await deployer.alive({ url: "http://127.0.0.1:2024" }), false);
  await deployer.stop(deployment.deploymentId, serving);
  assert.equal(existsSync(join(outputDir, deployment.deploymentId)), false);
  assert.equal(await deployer.alive(serving), false);
});

test("through the control plane: an image deploys as manifests at the Service's URL; source local fails to create", async () => {
  const dir = tempDir("controlplane-kubernetes-");
  dirs.push(dir);
  const apiKey = `k8s-key-${randomUUID()}`;
  const configPath = join(dir, "controlplane.yaml");
  writeFileSync(
    configPath,
    stringify({
      listen: "127.0.0.1:0",
      dataDir: join(dir, "data"),
      apiKeys: [apiKey],
      deployer: "kubernetes",
      kubernetes: { namespace: "agents" },
    }),
  );
  const controlPlane = await startService(["controlplane", "serve", "--config", configPath], "control plane listening");
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${controlPlane.url}${path}`, {
      method,
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  const settled = (deployment: any) =>
    waitFor(
      async () => {
        const revision = (await api("GET", `/v2/deployments/${deployment.id}/revisions/${deployment.latest_revision_id}`)).body;
        return !revision.status.endsWith("ING") && !revision.status.startsWith("AWAITING") && revision.status !== "QUEUED"
          ? revision
          : undefined;
      },
      10_000,
      "the revision to settle",
    );
  try {
    const created = await api("POST", "/v2/deployments", {
      name: "k8s",
      source: "external_docker",
      source_config: { deployment_type: "prod" },
      source_revision_config: { image_uri: IMAGE },
      secrets: [{ name: "OPENAI_API_KEY", value: "sk-test" }],
    });
    assert.ok(created.status < 300, JSON.stringify(created.body));
    const revision = await settled(created.body);
    assert.equal(revision.status, "DEPLOYED", revision.status_message);
    const deployment = (await api("GET", `/v2/deployments/${created.body.id}`)).body;
    assert.equal(deployment.url, `http://agent-${deployment.id}.agents.svc.cluster.local:2024`);
    const current = join(dir, "data", "manifests", deployment.id, "current.yaml");
    assert.equal(manifests(current).Deployment.spec.template.spec.containers[0].image, IMAGE);
    assert.ok(existsSync(join(dir, "data", "manifests", deployment.id, `${revision.id}.yaml`)));
    assert.ok(!controlPlane.output().includes("sk-test"), "the secret value is not logged");

    const local = await api("POST", "/v2/deployments", {
      name: "local-on-k8s",
      source: "local",
      source_revision_config: { langgraph_config_path: "/srv/graph.json" },
    });
    assert.ok(local.status < 300, JSON.stringify(local.body));
    const failed = await settled(local.body);
    assert.equal(failed.status, "CREATE_FAILED");
    assert.match(failed.status_message, /kubernetes deployer runs source "external_docker" only, not "local"/);
  } finally {
    await controlPlane.stop();
  }
});

test("a database: DATABASE_URI from the named Secret (or the configured value) and the deployment's own DATABASE_SCHEMA, as configuration; several replicas", async () => {
  const outputDir = tempDir("kubernetes-deployer-");
  dirs.push(outputDir);
  const fromSecret = new KubernetesDeployer({
    outputDir,
    namespace: "agents",
    agentServer: {},
    databaseUriSecret: { name: "agents-db", key: "uri" },
    replicas: 3,
    logger: pino({ level: "silent" }),
  });
  const deployment = target(IMAGE, { OPENAI_API_KEY: "sk-test-value-2" });
  await fromSecret.create(deployment);
  await fromSecret.build(deployment);
  await fromSecret.deploy(deployment, undefined);
  const { Secret, Deployment } = manifests(join(outputDir, deployment.deploymentId, "current.yaml"));
  const container = Deployment.spec.template.spec.containers[0];
  const schema = `deployment_${deployment.deploymentId.replaceAll("-", "_")}`;
  assert.deepEqual(container.env, [
    { name: "DATABASE_URI", valueFrom: { secretKeyRef: { name: "agents-db", key: "uri" } } },
    { name: "DATABASE_SCHEMA", value: schema },
  ]);
  assert.deepEqual(Secret.stringData, { OPENAI_API_KEY: "sk-test-value-2" }, "the deployment's own secrets only");
  assert.equal(Deployment.spec.replicas, 3);

  const withValue = new KubernetesDeployer({
    outputDir,
    namespace: "agents",
    agentServer: { databaseUri: "postgres://agents@db.internal/agents" },
    logger: pino({ level: "silent" }),
  });
  const other = target(IMAGE);
  await withValue.create(other);
  await withValue.build(other);
  await withValue.deploy(other, undefined);
  const rendered = manifests(join(outputDir, other.deploymentId, "current.yaml")).Deployment.spec.template.spec.containers[0].env;
  assert.equal(rendered[0].value, "postgres://agents@db.internal/agents");
  assert.notEqual(rendered[1].value, schema, "every deployment has a schema of its own");
});
