// JSON Schemas of the Kubernetes objects the chart's values pass through (core/v1, as the API reference of
// Kubernetes 1.33 defines them), so that values.schema.json refuses a misspelt field (`resources.limit`,
// `securityContext.runAsUSer`) at `helm install` instead of the API server dropping or refusing it later. Fields
// are closed (additionalProperties: false) and typed; objects nested deeper than matters for a typo are left open.

type Schema = Record<string, unknown>;
const object = (properties: Record<string, Schema>, required: string[] = []): Schema => ({
  type: "object",
  additionalProperties: false,
  properties,
  ...(required.length > 0 ? { required } : {}),
});
const string: Schema = { type: "string" };
const boolean: Schema = { type: "boolean" };
const integer: Schema = { type: "integer" };
const open: Schema = { type: "object" };
const strings: Schema = { type: "array", items: string };
const stringMap: Schema = { type: "object", additionalProperties: string };
/** resource.Quantity: "500m", "128Mi", or a number. */
const quantity: Schema = { type: ["string", "number"] };
const intOrString: Schema = { type: ["string", "integer"] };

const keySelector = object({ name: string, key: string, optional: boolean }, ["key"]);
const envVarSource = object({
  configMapKeyRef: keySelector,
  secretKeyRef: keySelector,
  fieldRef: object({ apiVersion: string, fieldPath: string }, ["fieldPath"]),
  resourceFieldRef: object({ containerName: string, divisor: quantity, resource: string }, ["resource"]),
  fileKeyRef: object({ volumeName: string, path: string, key: string, optional: boolean }, ["volumeName", "path", "key"]),
});

export const EnvVar = object({ name: string, value: string, valueFrom: envVarSource }, ["name"]);
export { envVarSource as EnvVarSource };

export const ResourceRequirements = object({
  limits: { type: "object", additionalProperties: quantity },
  requests: { type: "object", additionalProperties: quantity },
  claims: { type: "array", items: object({ name: string, request: string }, ["name"]) },
});

const seLinuxOptions = object({ level: string, role: string, type: string, user: string });
const seccompProfile = object({ type: { enum: ["RuntimeDefault", "Unconfined", "Localhost"] }, localhostProfile: string }, ["type"]);
const appArmorProfile = object({ type: { enum: ["RuntimeDefault", "Unconfined", "Localhost"] }, localhostProfile: string }, ["type"]);
const windowsOptions = object({ gmsaCredentialSpec: string, gmsaCredentialSpecName: string, hostProcess: boolean, runAsUserName: string });

export const SecurityContext = object({
  allowPrivilegeEscalation: boolean,
  appArmorProfile,
  capabilities: object({ add: strings, drop: strings }),
  privileged: boolean,
  procMount: { enum: ["Default", "Unmasked"] },
  readOnlyRootFilesystem: boolean,
  runAsGroup: integer,
  runAsNonRoot: boolean,
  runAsUser: integer,
  seLinuxOptions,
  seccompProfile,
  windowsOptions,
});

export const PodSecurityContext = object({
  appArmorProfile,
  fsGroup: integer,
  fsGroupChangePolicy: { enum: ["OnRootMismatch", "Always"] },
  runAsGroup: integer,
  runAsNonRoot: boolean,
  runAsUser: integer,
  seLinuxChangePolicy: string,
  seLinuxOptions,
  seccompProfile,
  supplementalGroups: { type: "array", items: integer },
  supplementalGroupsPolicy: { enum: ["Merge", "Strict"] },
  sysctls: { type: "array", items: object({ name: string, value: string }, ["name", "value"]) },
  windowsOptions,
});

/** A Probe's timing fields (the chart supplies the handler: an exec of node inside the container). */
export const ProbeTiming = object({
  initialDelaySeconds: integer,
  periodSeconds: integer,
  timeoutSeconds: integer,
  successThreshold: integer,
  failureThreshold: integer,
  terminationGracePeriodSeconds: integer,
});

const execAction = object({ command: strings });
const handler = {
  exec: execAction,
  httpGet: object(
    {
      host: string,
      httpHeaders: { type: "array", items: object({ name: string, value: string }, ["name", "value"]) },
      path: string,
      port: intOrString,
      scheme: { enum: ["HTTP", "HTTPS"] },
    },
    ["port"],
  ),
  tcpSocket: object({ host: string, port: intOrString }, ["port"]),
  grpc: object({ port: integer, service: string }, ["port"]),
};
export const Probe = object({ ...(ProbeTiming.properties as Record<string, Schema>), ...handler });

export const VolumeMount = object(
  {
    name: string,
    mountPath: string,
    readOnly: boolean,
    recursiveReadOnly: { enum: ["Disabled", "IfPossible", "Enabled"] },
    subPath: string,
    subPathExpr: string,
    mountPropagation: { enum: ["None", "HostToContainer", "Bidirectional"] },
  },
  ["name", "mountPath"],
);

const keyToPath = object({ key: string, path: string, mode: integer }, ["key", "path"]);
/** Volume sources typed closely are the ones a sidecar's extra files come from; the others are checked as objects. */
export const Volume = object(
  {
    name: string,
    secret: object({ secretName: string, items: { type: "array", items: keyToPath }, defaultMode: integer, optional: boolean }),
    configMap: object({ name: string, items: { type: "array", items: keyToPath }, defaultMode: integer, optional: boolean }),
    emptyDir: object({ medium: string, sizeLimit: quantity }),
    persistentVolumeClaim: object({ claimName: string, readOnly: boolean }, ["claimName"]),
    hostPath: object({ path: string, type: string }, ["path"]),
    projected: object({ sources: { type: "array", items: open }, defaultMode: integer }),
    csi: object(
      { driver: string, readOnly: boolean, fsType: string, volumeAttributes: stringMap, nodePublishSecretRef: object({ name: string }) },
      ["driver"],
    ),
    downwardAPI: object({ items: { type: "array", items: open }, defaultMode: integer }),
    ephemeral: object({ volumeClaimTemplate: open }),
    image: object({ reference: string, pullPolicy: { enum: ["Always", "IfNotPresent", "Never"] } }),
    nfs: object({ server: string, path: string, readOnly: boolean }, ["server", "path"]),
    ...Object.fromEntries(
      [
        "awsElasticBlockStore",
        "azureDisk",
        "azureFile",
        "cephfs",
        "cinder",
        "fc",
        "flexVolume",
        "flocker",
        "gcePersistentDisk",
        "gitRepo",
        "glusterfs",
        "iscsi",
        "photonPersistentDisk",
        "portworxVolume",
        "quobyte",
        "rbd",
        "scaleIO",
        "storageos",
        "vsphereVolume",
      ].map((source) => [source, open]),
    ),
  },
  ["name"],
);

export const Toleration = object({
  key: string,
  operator: { enum: ["Exists", "Equal"] },
  value: string,
  effect: { enum: ["NoSchedule", "PreferNoSchedule", "NoExecute", ""] },
  tolerationSeconds: integer,
});

export const Affinity = object({ nodeAffinity: open, podAffinity: open, podAntiAffinity: open });
export const LocalObjectReference = object({ name: string }, ["name"]);

export const ContainerPort = object(
  { name: string, containerPort: integer, protocol: { enum: ["TCP", "UDP", "SCTP"] }, hostPort: integer, hostIP: string },
  ["containerPort"],
);

/** core/v1 Container; restartPolicy (only "Always", init containers only) makes a native sidecar (1.29+). */
export const Container = object(
  {
    name: string,
    image: string,
    imagePullPolicy: { enum: ["Always", "IfNotPresent", "Never"] },
    command: strings,
    args: strings,
    workingDir: string,
    env: { type: "array", items: EnvVar },
    envFrom: { type: "array", items: open },
    ports: { type: "array", items: ContainerPort },
    volumeMounts: { type: "array", items: VolumeMount },
    volumeDevices: { type: "array", items: open },
    livenessProbe: Probe,
    readinessProbe: Probe,
    startupProbe: Probe,
    lifecycle: open,
    resources: ResourceRequirements,
    resizePolicy: { type: "array", items: open },
    restartPolicy: { enum: ["Always"] },
    securityContext: SecurityContext,
    stdin: boolean,
    stdinOnce: boolean,
    tty: boolean,
    terminationMessagePath: string,
    terminationMessagePolicy: { enum: ["File", "FallbackToLogsOnError"] },
  },
  ["name"],
);

/** core/v1 PodSpec: every field closed at the top, the containers, volumes and security context typed. */
export const PodSpec = object(
  {
    activeDeadlineSeconds: integer,
    affinity: Affinity,
    automountServiceAccountToken: boolean,
    containers: { type: "array", items: Container, minItems: 1 },
    dnsConfig: open,
    dnsPolicy: { enum: ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"] },
    enableServiceLinks: boolean,
    ephemeralContainers: { type: "array", items: open },
    hostAliases: { type: "array", items: open },
    hostIPC: boolean,
    hostNetwork: boolean,
    hostPID: boolean,
    hostUsers: boolean,
    hostname: string,
    imagePullSecrets: { type: "array", items: LocalObjectReference },
    initContainers: { type: ["array", "null"], items: Container },
    nodeName: string,
    nodeSelector: stringMap,
    os: object({ name: string }, ["name"]),
    overhead: { type: "object", additionalProperties: quantity },
    preemptionPolicy: string,
    priority: integer,
    priorityClassName: string,
    readinessGates: { type: "array", items: open },
    resourceClaims: { type: "array", items: open },
    resources: ResourceRequirements,
    restartPolicy: { enum: ["Always", "OnFailure", "Never"] },
    runtimeClassName: string,
    schedulerName: string,
    schedulingGates: { type: "array", items: open },
    securityContext: PodSecurityContext,
    serviceAccount: string,
    serviceAccountName: string,
    setHostnameAsFQDN: boolean,
    shareProcessNamespace: boolean,
    subdomain: string,
    terminationGracePeriodSeconds: integer,
    tolerations: { type: "array", items: Toleration },
    topologySpreadConstraints: { type: "array", items: open },
    volumes: { type: ["array", "null"], items: Volume },
  },
  ["containers"],
);
