import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Logger } from "pino";
import { stringify } from "yaml";
import { DeployerError, deploymentSchema, type Deployer, type DeployTarget, type Serving } from "./deployer.ts";

/** The agent server's port in the pod (a2a serve's default) and the Service's. */
const PORT = 2024;
/** Where graph.json is in an image built FROM egress-agent: graphs under /app resolve the image's @langchain packages. */
export const DEFAULT_GRAPH_CONFIG_PATH = "/app/graph.json";
const CURRENT = "current.yaml";
/** Every object of a deployment is named `agent-<deployment id>`: a DNS-1035 label (a Service name starts with a letter). */
const NAME_PREFIX = "agent-";
/** A deployment id that fits in a name of at most 63 lower-case alphanumerics and '-' after the prefix. */
const NAME_ID = new RegExp(`^[a-z0-9](?:[a-z0-9-]{0,${61 - NAME_PREFIX.length}}[a-z0-9])?$`);
const REVISION_ID = /^[A-Za-z0-9_-]+$/;
const REVISION_ANNOTATION = "egress-agent/revision-id";
/** The egress-agent image's user (Dockerfile: UID and GID 10001). */
const RUN_AS = { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001 };

export interface KubernetesDeployerOptions {
  /** Each deployment's manifests go to `<outputDir>/<deployment id>/`. */
  outputDir: string;
  namespace: string;
  /** The graph.json inside every deployed image (default DEFAULT_GRAPH_CONFIG_PATH). */
  graphConfigPath?: string | undefined;
  /** What the agent servers report to; the sidecar URL must be reachable from the pod (a Service, not 127.0.0.1). */
  agentServer: {
    sidecarUrl?: string | undefined;
    tenantId?: string | undefined;
    organizationId?: string | undefined;
    databaseUri?: string | undefined;
  };
  /** DATABASE_URI from this existing Secret (beats agentServer.databaseUri: the manifests then hold no password). */
  databaseUriSecret?: { name: string; key: string } | undefined;
  /** Pods per deployment (more than one needs a database). */
  replicas?: number | undefined;
  logger: Logger;
}

/**
 * Renders each revision as Kubernetes manifests instead of running it: a Secret (the deployment's secrets), a
 * Deployment of the revision's image and a ClusterIP Service, in `<outputDir>/<deployment id>/<revision id>.yaml`,
 * with `current.yaml` the latest deployed one. The control plane never reaches a cluster: an operator or a CD job
 * applies current.yaml (`kubectl apply -f`), or a GitOps tool syncs outputDir.
 *
 * The image (source "external_docker") holds the graphs: build it FROM the egress-agent image with graph.json at
 * graphConfigPath (default /app/graph.json) and the graph modules beside it; its ENTRYPOINT stays `egress-agent`.
 */
export class KubernetesDeployer implements Deployer {
  readonly #outputDir: string;
  readonly #namespace: string;
  readonly #graphConfigPath: string;
  readonly #options: KubernetesDeployerOptions;
  readonly #logger: Logger;

  constructor(options: KubernetesDeployerOptions) {
    this.#options = options;
    this.#outputDir = resolve(options.outputDir);
    this.#namespace = options.namespace;
    this.#graphConfigPath = options.graphConfigPath ?? DEFAULT_GRAPH_CONFIG_PATH;
    this.#logger = options.logger;
  }

  async create(target: DeployTarget): Promise<void> {
    if (target.source !== "external_docker") {
      throw new DeployerError(
        `the kubernetes deployer runs source "external_docker" only, not "${target.source}": build an image FROM egress-agent with graph.json at ${this.#graphConfigPath} and give its image_uri`,
      );
    }
    imageUri(target);
    // Owner-only: the manifests hold the deployment's secret values.
    mkdirSync(this.#deploymentDir(target.deploymentId), { recursive: true, mode: 0o700 });
  }

  async build(target: DeployTarget): Promise<void> {
    const image = imageUri(target);
    const problem = imageReferenceProblem(image);
    if (problem)
      throw new DeployerError(
        `image_uri ${JSON.stringify(image)} is not an image reference (${problem}): give registry/name:tag or registry/name@sha256:<64 hex digits>`,
      );
    this.#logger.info({ deploymentId: target.deploymentId, revisionId: target.revisionId, image }, "deployment image checked");
  }

  async deploy(target: DeployTarget, _previous: Serving | undefined): Promise<Serving> {
    const { deploymentId, revisionId } = target;
    if (!REVISION_ID.test(revisionId)) throw new DeployerError(`revision id ${JSON.stringify(revisionId)} cannot name a file`);
    const dir = this.#deploymentDir(deploymentId);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const text = this.#render(target);
    // 0600: the Secret's stringData holds the deployment's secret values in clear text.
    const file = join(dir, `${revisionId}.yaml`);
    writePrivate(file, text);
    writePrivate(join(dir, CURRENT), text);
    const url = serviceUrl(kubernetesName(deploymentId), this.#namespace);
    this.#logger.info({ deploymentId, revisionId, file, url }, "kubernetes manifests rendered");
    return { url };
  }

  /**
   * Removes the deployment's manifests. The cluster's objects are not the control plane's to delete: an operator runs
   * `kubectl delete -f <outputDir>/<deployment id>/current.yaml` before deleting the deployment, or a pruning sync of
   * outputDir (a GitOps tool, `kubectl apply --prune`) deletes them once the directory is gone.
   */
  async stop(deploymentId: string, _serving: Serving | undefined): Promise<void> {
    rmSync(this.#deploymentDir(deploymentId), { recursive: true, force: true });
  }

  /** Whether the deployment's current.yaml is still there: the control plane cannot see the cluster itself. */
  async alive(serving: Serving): Promise<boolean> {
    let host: string;
    try {
      host = new URL(serving.url).hostname;
    } catch {
      return false;
    }
    const [service, namespace] = host.split(".");
    if (namespace !== this.#namespace || !service?.startsWith(NAME_PREFIX)) return false;
    const deploymentId = service.slice(NAME_PREFIX.length);
    return NAME_ID.test(deploymentId) && existsSync(join(this.#outputDir, deploymentId, CURRENT));
  }

  #deploymentDir(deploymentId: string): string {
    kubernetesName(deploymentId); // the id names objects and a directory: never a path of its own
    return join(this.#outputDir, deploymentId);
  }

  /** The revision as multi-document YAML: Secret, Deployment, Service. */
  #render(target: DeployTarget): string {
    const { deploymentId, revisionId } = target;
    const name = kubernetesName(deploymentId);
    const secretName = `${name}-env`;
    const selector = { "app.kubernetes.io/name": "agent-server", "app.kubernetes.io/instance": name };
    const labels = {
      ...selector,
      "app.kubernetes.io/component": "agent-server",
      "app.kubernetes.io/part-of": "egress-agent",
      "app.kubernetes.io/managed-by": "egress-agent-controlplane",
      "egress-agent/deployment-id": deploymentId,
    };
    const metadata = (objectName: string) => ({ name: objectName, namespace: this.#namespace, labels });
    const secret = { apiVersion: "v1", kind: "Secret", metadata: metadata(secretName), type: "Opaque", stringData: { ...target.secrets } };
    const deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { ...metadata(name), annotations: { [REVISION_ANNOTATION]: revisionId } },
      spec: {
        replicas: this.#options.replicas ?? 1,
        selector: { matchLabels: selector },
        // The new pod answers /ok before the old one goes. Conversations live in the database when there is one;
        // else in the pod's emptyDir, and a roll ends them.
        strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
        template: {
          // A new revision rolls the pods even when only the secrets changed (envFrom is read at container start).
          metadata: { labels, annotations: { [REVISION_ANNOTATION]: revisionId } },
          spec: {
            // The agent server never talks to the Kubernetes API, and gets no other Service's variables.
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            securityContext: { ...RUN_AS, fsGroup: 10001, seccompProfile: { type: "RuntimeDefault" } },
            terminationGracePeriodSeconds: 15, // the agent server gives running tasks 10 s after SIGTERM
            containers: [this.#container(imageUri(target), secretName, deploymentId)],
            volumes: [
              { name: "data", emptyDir: { sizeLimit: "1Gi" } },
              { name: "tmp", emptyDir: { sizeLimit: "64Mi" } },
            ],
          },
        },
      },
    };
    const service = {
      apiVersion: "v1",
      kind: "Service",
      metadata: metadata(name),
      spec: { type: "ClusterIP", selector, ports: [{ name: "http", port: PORT, targetPort: "http", protocol: "TCP" }] },
    };
    const header = `# Rendered by the egress-agent control plane: deployment ${deploymentId}, revision ${revisionId}.\n# Holds secret values (the Secret's stringData). Apply: kubectl apply -f <this file>\n`;
    // No anchors for the shared labels and probes: plain YAML for every tool that diffs or patches it.
    return (
      header + [secret, deployment, service].map((doc) => stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false })).join("---\n")
    );
  }

  #container(image: string, secretName: string, deploymentId: string) {
    const probe = { httpGet: { path: "/ok", port: "http" }, timeoutSeconds: 2 };
    // Ready only while its database answers (and its LISTEN connection is up); alive all the same: a restart brings no database back.
    const ready = { ...probe, httpGet: { path: "/readyz", port: "http" } };
    return {
      name: "agent-server",
      image,
      imagePullPolicy: "IfNotPresent",
      args: this.#serveArgs(),
      ports: [{ name: "http", containerPort: PORT, protocol: "TCP" }],
      envFrom: [{ secretRef: { name: secretName } }],
      // The database is configuration (the deployment's secrets may not name it): listed after envFrom, it wins.
      ...this.#databaseEnv(deploymentId),
      volumeMounts: [
        { name: "data", mountPath: "/data" },
        { name: "tmp", mountPath: "/tmp" },
      ],
      readinessProbe: { ...ready, periodSeconds: 5, failureThreshold: 3 },
      livenessProbe: { ...probe, initialDelaySeconds: 10, periodSeconds: 10, failureThreshold: 6 },
      resources: { requests: { cpu: "100m", memory: "256Mi" }, limits: { memory: "1Gi" } },
      // As the helm chart's sidecar: the image's UID, a read-only root filesystem, no capabilities. /tmp stays writable
      // here (the sidecar needs none): a deployment's graph code may want temporary files.
      securityContext: {
        ...RUN_AS,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
        seccompProfile: { type: "RuntimeDefault" },
      },
    };
  }

  /** After the image's ENTRYPOINT (egress-agent). */
  #databaseEnv(deploymentId: string): { env?: object[] } {
    const { databaseUriSecret } = this.#options;
    const { databaseUri } = this.#options.agentServer;
    if (!databaseUriSecret && !databaseUri) return {};
    const uri = databaseUriSecret
      ? { name: "DATABASE_URI", valueFrom: { secretKeyRef: { name: databaseUriSecret.name, key: databaseUriSecret.key } } }
      : { name: "DATABASE_URI", value: databaseUri };
    return { env: [uri, { name: "DATABASE_SCHEMA", value: deploymentSchema(deploymentId) }] };
  }

  #serveArgs(): string[] {
    const { sidecarUrl, tenantId, organizationId } = this.#options.agentServer;
    const args = ["a2a", "serve", "--config", this.#graphConfigPath, "--listen", `0.0.0.0:${PORT}`, "--data-dir", "/data"];
    if (sidecarUrl) args.push("--sidecar-url", sidecarUrl);
    if (tenantId) args.push("--tenant-id", tenantId);
    if (organizationId) args.push("--organization-id", organizationId);
    return args;
  }
}

/** `agent-<deployment id>`: the name of the deployment's Deployment and Service (its Secret adds `-env`). */
export function kubernetesName(deploymentId: string): string {
  if (!NAME_ID.test(deploymentId))
    throw new DeployerError(
      `deployment id ${JSON.stringify(deploymentId)} cannot name Kubernetes objects (lower-case letters, digits and '-', at most ${63 - NAME_PREFIX.length} characters)`,
    );
  return `${NAME_PREFIX}${deploymentId}`;
}

export function serviceUrl(name: string, namespace: string): string {
  return `http://${name}.${namespace}.svc.cluster.local:${PORT}`;
}

function imageUri(target: DeployTarget): string {
  const image = target.sourceRevisionConfig.image_uri;
  if (!image) throw new DeployerError("source_revision_config.image_uri is required for source external_docker");
  return image;
}

const DOMAIN_COMPONENT = "(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])";
const DOMAIN = new RegExp(`^${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*(?::[0-9]+)?$`);
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;

/**
 * What is wrong with an image reference, in the grammar of the OCI distribution reference:
 * `[registry[:port]/]path[:tag][@sha256:digest]`, with a tag or a digest (no implicit :latest: a revision names what
 * it runs). Undefined when it is one.
 */
export function imageReferenceProblem(reference: string): string | undefined {
  const at = reference.indexOf("@");
  const digest = at === -1 ? undefined : reference.slice(at + 1);
  let rest = at === -1 ? reference : reference.slice(0, at);
  if (digest !== undefined && !DIGEST.test(digest)) return "the digest is not sha256:<64 lower-case hex digits>";
  const lastColon = rest.lastIndexOf(":");
  let tag: string | undefined;
  if (lastColon > rest.lastIndexOf("/")) {
    tag = rest.slice(lastColon + 1);
    rest = rest.slice(0, lastColon);
    if (!TAG.test(tag)) return "the tag is not up to 128 letters, digits, '_', '.' or '-'";
  }
  if (tag === undefined && digest === undefined) return "neither a tag nor a digest";
  if (rest.length === 0 || rest.length > 255) return "the name is empty or longer than 255 characters";
  const parts = rest.split("/");
  // As Docker reads it: the first part is a registry when it has a '.' or a ':' or is localhost.
  if (parts.length > 1 && /[.:]|^localhost$/.test(parts[0]!)) {
    if (!DOMAIN.test(parts.shift()!)) return "the registry is not a host name with an optional port";
  }
  if (!parts.every((part) => PATH_COMPONENT.test(part))) return "the repository path is not lower-case letters, digits and separators";
  return undefined;
}

/** Writes owner-only, whole or not at all (a crash never leaves half a manifest). */
function writePrivate(path: string, text: string): void {
  const partial = `${path}.partial`;
  rmSync(partial, { force: true });
  writeFileSync(partial, text, { mode: 0o600 });
  renameSync(partial, path);
}
