{{/*
Named templates. The sidecar ones (egress-agent.sidecarContainer, egress-agent.sidecarVolumes,
egress-agent.volumeClaimTemplate) are called with a chart's root context: this chart's own (templates/deployment.yaml)
or, from a parent chart that has this one as dependency "egress-agent", the parent's `.`, whose values for this chart
are under .Values "egress-agent" (Helm merges this chart's defaults into them). A dependency with an alias passes
(dict "Values" (index .Values "ALIAS") "Release" .Release). They read only .Values and .Release, so they name the
ConfigMap and PVC this chart renders in the same release.
*/}}

{{/* The sidecar's values: under "egress-agent" when called from a parent chart, else the chart's own. */}}
{{- define "egress-agent.scope" -}}
{{- $values := .Values -}}
{{- if hasKey .Values "egress-agent" -}}{{- $values = index .Values "egress-agent" -}}{{- end -}}
{{- toYaml (dict "Values" $values) -}}
{{- end -}}

{{- define "egress-agent.name" -}}
{{- default "egress-agent" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* "<release>-egress-agent", or the release name when it already contains the name. */}}
{{- define "egress-agent.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "egress-agent.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "egress-agent.selectorLabels" -}}
app.kubernetes.io/name: {{ include "egress-agent.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "egress-agent.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "egress-agent.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "egress-agent.image" -}}
{{- if not .Values.image.repository -}}
{{- fail "image.repository: set it to the registry you pushed this repository's image to (docker build -t REGISTRY/egress-agent:0.1.0 . && docker push REGISTRY/egress-agent:0.1.0); no public image is published" -}}
{{- end -}}
{{- printf "%s:%s" .Values.image.repository (toString .Values.image.tag) -}}
{{- end -}}

{{/* commonEnv and extraEnv as EnvVar lists, values as strings: a list of EnvVars, or a map NAME: value (or NAME: {valueFrom: ...}). */}}
{{- define "egress-agent.envList" -}}
{{- if kindIs "map" . -}}
{{- range $name, $value := . }}
- name: {{ $name }}
{{- if kindIs "map" $value }}
  {{- toYaml $value | nindent 2 }}
{{- else }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}
{{- else if . -}}
{{- range . }}
- name: {{ .name }}
{{- if not (kindIs "invalid" .value) }}
  {{- /* `--set extraEnv[0].value=false` gives a boolean (a number likewise): Kubernetes takes only strings. */}}
  value: {{ .value | toString | quote }}
{{- end }}
{{- with .valueFrom }}
  valueFrom:
    {{- toYaml . | nindent 4 }}
{{- end }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* Render-time checks: a wrong value fails `helm install` with a message instead of a crash-looping sidecar. */}}
{{- define "egress-agent.validateValues" -}}
{{- range $key := list "listen" "dataDir" "licenseKey" "licenseKeyFile" "offline" "beaconUrl" "instanceVersion" "config" "metrics" -}}
{{- if hasKey ($.Values.agent | default dict) $key -}}
{{- fail (printf "agent.%s: the chart sets this key (mounts, probes and secrets depend on it); use the top-level values beaconUrl, instanceVersion, config.telemetry, license.*, offline.*, metrics.*" $key) -}}
{{- end -}}
{{- end -}}
{{- $licenseFromEnv := false -}}
{{- range list .Values.commonEnv .Values.extraEnv -}}
{{- if kindIs "map" . -}}
{{- if hasKey . "PLATFORM_LICENSE_KEY" -}}{{- $licenseFromEnv = true -}}{{- end -}}
{{- else -}}
{{- range (. | default list) -}}
{{- if eq .name "PLATFORM_LICENSE_KEY" -}}{{- $licenseFromEnv = true -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if .Values.offline.enabled -}}
{{- if not .Values.offline.licenseSecret -}}
{{- fail "offline.licenseSecret: required when offline.enabled (a Secret with the offline license and the vendor's public key)" -}}
{{- end -}}
{{- else if not (or .Values.license.existingSecret $licenseFromEnv) -}}
{{- fail "license.existingSecret: required unless offline.enabled or PLATFORM_LICENSE_KEY is in commonEnv/extraEnv" -}}
{{- end -}}
{{- if and .Values.networkPolicy.enabled (not .Values.offline.enabled) (not .Values.networkPolicy.beacon.cidrs) (not .Values.networkPolicy.proxy.cidrs) -}}
{{- fail "networkPolicy.beacon.cidrs: give the beacon's addresses (or networkPolicy.proxy.cidrs): a NetworkPolicy cannot name a host, and without them the sidecar could reach no beacon" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled: needs metrics.enabled (the listener it scrapes)" -}}
{{- end -}}
{{- if and .Values.metrics.podMonitor.enabled (not .Values.metrics.enabled) -}}
{{- fail "metrics.podMonitor.enabled: needs metrics.enabled (the listener it scrapes)" -}}
{{- end -}}
{{- if and .Values.standalone.enabled .Values.persistence.claimTemplate -}}
{{- fail "persistence.claimTemplate: only for a StatefulSet of the platform's; the standalone Deployment needs persistence.enabled or an emptyDir" -}}
{{- end -}}
{{- end -}}

{{/*
The sidecar's egress.yaml (templates/configmap.yaml). The keys above `.Values.agent` are the chart's: listen and
dataDir match the probes and mounts below, licenseKeyFile / offline.* the Secret mounts. test/packaging renders this
template from values.yaml and runs `egress-agent validate` on the result.
*/}}
{{- define "egress-agent.config" -}}
# Rendered by the egress-agent Helm chart. Keys from `agent:` follow the chart-owned ones.
listen: "127.0.0.1:4318"
dataDir: /data
beaconUrl: {{ .Values.beaconUrl | quote }}
instanceVersion: {{ .Values.instanceVersion | quote }}
{{- if .Values.offline.enabled }}
offline:
  enabled: true
  licenseFile: /var/run/secrets/egress-agent-offline/license.jwt
  publicKeyFile: /var/run/secrets/egress-agent-offline/vendor.pem
{{- else if .Values.license.existingSecret }}
licenseKeyFile: /var/run/secrets/egress-agent/license-key
{{- end }}
{{- if .Values.metrics.enabled }}
metrics:
  listen: {{ printf "0.0.0.0:%v" .Values.metrics.port | quote }}
{{- end }}
{{- if .Values.agent }}
{{ toYaml .Values.agent }}
{{- end }}
{{- end -}}

{{/* An exec probe: node inside the container asks the loopback-only API (kubelet HTTP probes come from the node). */}}
{{- define "egress-agent.probeCommand" -}}
- node
- -e
- {{ printf "fetch('http://127.0.0.1:4318%s').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))" . | quote }}
{{- end -}}

{{/* The sidecar's scope (values and release) for the .render templates. */}}
{{- define "egress-agent.scoped" -}}
{{- toYaml (merge (include "egress-agent.scope" . | fromYaml) (dict "Release" .Release)) -}}
{{- end -}}

{{/*
The sidecar, in the form nativeSidecar chooses, for a pod template of the platform's:
  containers:
    {{- include "egress-agent.containers" . | nindent 8 }}        the sidecar when nativeSidecar is false
  initContainers:
    {{- include "egress-agent.initContainers" . | nindent 8 }}    the sidecar when nativeSidecar is true
Each renders nothing in the other case, so a pod template includes both. The pod also needs egress-agent.sidecarVolumes.
*/}}
{{- define "egress-agent.containers" -}}
{{- $scope := include "egress-agent.scoped" . | fromYaml -}}
{{- if not $scope.Values.nativeSidecar -}}
{{ include "egress-agent.sidecarContainer.render" $scope }}
{{- end -}}
{{- end -}}

{{- define "egress-agent.initContainers" -}}
{{- $scope := include "egress-agent.scoped" . | fromYaml -}}
{{- if $scope.Values.nativeSidecar -}}
{{ include "egress-agent.sidecarContainer.render" $scope }}
{{- end -}}
{{- end -}}

{{/*
The sidecar container as one list item, in the form nativeSidecar chooses (a native sidecar belongs in
`initContainers:`). Kept for charts that include it already; egress-agent.containers and .initContainers place it.
*/}}
{{- define "egress-agent.sidecarContainer" -}}
{{- include "egress-agent.sidecarContainer.render" (include "egress-agent.scoped" . | fromYaml) -}}
{{- end -}}

{{/*
"checksum/egress-agent-config": {{ include "egress-agent.configChecksum" . }} in a pod template's annotations rolls
the pods when the sidecar's config changes. Works with a parent chart's `.`, as the other sidecar templates do.
*/}}
{{- define "egress-agent.configChecksum" -}}
{{- include "egress-agent.config" (include "egress-agent.scoped" . | fromYaml) | sha256sum -}}
{{- end -}}

{{- define "egress-agent.sidecarContainer.render" -}}
- name: egress-agent
  image: {{ include "egress-agent.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  {{- if and .Values.nativeSidecar (not .Standalone) }}
  # A native sidecar (Kubernetes 1.29+): up before the platform's containers, stopped after them.
  restartPolicy: Always
  {{- end }}
  args: ["start"]
  env:
    - name: EGRESS_CONFIG
      value: /etc/egress-agent/egress.yaml
    {{- with .Values.config.telemetry }}
    {{- if not (kindIs "invalid" .logs) }}
    - name: BEACON_LOGGING_ENABLED
      value: {{ .logs | quote }}
    {{- end }}
    {{- if not (kindIs "invalid" .metrics) }}
    - name: BEACON_METRICS_ENABLED
      value: {{ .metrics | quote }}
    {{- end }}
    {{- if not (kindIs "invalid" .traces) }}
    - name: BEACON_TRACING_ENABLED
      value: {{ .traces | quote }}
    {{- end }}
    {{- end }}
    {{- with .Values.commonEnv }}
    {{- include "egress-agent.envList" . | nindent 4 }}
    {{- end }}
    {{- with .Values.extraEnv }}
    {{- include "egress-agent.envList" . | nindent 4 }}
    {{- end }}
  volumeMounts:
    - name: egress-agent-config
      mountPath: /etc/egress-agent
      readOnly: true
    - name: egress-agent-data
      mountPath: /data
    - name: egress-agent-tmp
      mountPath: /tmp
    {{- if .Values.offline.enabled }}
    - name: egress-agent-offline
      mountPath: /var/run/secrets/egress-agent-offline
      readOnly: true
    {{- else if .Values.license.existingSecret }}
    - name: egress-agent-license
      mountPath: /var/run/secrets/egress-agent
      readOnly: true
    {{- end }}
    {{- with .Values.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  # The API listens on the pod's loopback only (the instance container reaches 127.0.0.1:4318); metrics.enabled adds
  # a listener on the pod's address that serves GET /metrics alone.
  {{- if .Values.metrics.enabled }}
  ports:
    - name: metrics
      containerPort: {{ .Values.metrics.port }}
      protocol: TCP
  {{- end }}
  {{- if and .Values.nativeSidecar (not .Standalone) }}
  startupProbe:
    exec:
      command:
        {{- include "egress-agent.probeCommand" "/healthz" | nindent 8 }}
    {{- toYaml .Values.probes.startup | nindent 4 }}
  {{- end }}
  livenessProbe:
    exec:
      command:
        {{- include "egress-agent.probeCommand" "/healthz" | nindent 8 }}
    {{- toYaml .Values.probes.liveness | nindent 4 }}
  readinessProbe:
    exec:
      command:
        {{- include "egress-agent.probeCommand" "/readyz" | nindent 8 }}
    {{- toYaml .Values.probes.readiness | nindent 4 }}
  resources:
    {{- toYaml .Values.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
{{- end -}}

{{/* The volumes the sidecar container mounts, list items for the pod's `volumes:`. */}}
{{- define "egress-agent.sidecarVolumes" -}}
{{- include "egress-agent.sidecarVolumes.render" (merge (include "egress-agent.scope" . | fromYaml) (dict "Release" .Release)) -}}
{{- end -}}

{{- define "egress-agent.sidecarVolumes.render" -}}
- name: egress-agent-config
  configMap:
    name: {{ include "egress-agent.fullname" . }}
- name: egress-agent-tmp
  emptyDir:
    sizeLimit: {{ .Values.tmp.sizeLimit }}
{{- if not .Values.persistence.claimTemplate }}
- name: egress-agent-data
  {{- if .Values.persistence.enabled }}
  persistentVolumeClaim:
    claimName: {{ .Values.persistence.existingClaim | default (printf "%s-data" (include "egress-agent.fullname" .)) }}
  {{- else }}
  emptyDir: {}
  {{- end }}
{{- end }}
{{- if .Values.offline.enabled }}
- name: egress-agent-offline
  secret:
    secretName: {{ .Values.offline.licenseSecret }}
    defaultMode: 0444
    items:
      - key: {{ .Values.offline.licenseSecretKey }}
        path: license.jwt
      - key: {{ .Values.offline.publicKeySecretKey }}
        path: vendor.pem
{{- else if .Values.license.existingSecret }}
- name: egress-agent-license
  secret:
    secretName: {{ .Values.license.existingSecret }}
    defaultMode: 0444
    items:
      - key: {{ .Values.license.secretKey }}
        path: license-key
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "egress-agent.pvcSpec" -}}
accessModes:
  {{- toYaml .Values.persistence.accessModes | nindent 2 }}
{{- with .Values.persistence.storageClass }}
storageClassName: {{ . | quote }}
{{- end }}
resources:
  requests:
    storage: {{ .Values.persistence.size }}
{{- end -}}

{{/* A list item for a StatefulSet's volumeClaimTemplates (with persistence.claimTemplate: true): one outbox per pod. */}}
{{- define "egress-agent.volumeClaimTemplate" -}}
{{- include "egress-agent.volumeClaimTemplate.render" (merge (include "egress-agent.scope" . | fromYaml) (dict "Release" .Release)) -}}
{{- end -}}

{{- define "egress-agent.volumeClaimTemplate.render" -}}
- metadata:
    name: egress-agent-data
  spec:
    {{- include "egress-agent.pvcSpec" . | nindent 4 }}
{{- end -}}

{{/* The pods Prometheus scrapes: metrics.podSelector, or the standalone Deployment's. */}}
{{- define "egress-agent.metricsPodSelector" -}}
{{- if .Values.metrics.podSelector -}}
{{ toYaml .Values.metrics.podSelector }}
{{- else -}}
{{ include "egress-agent.selectorLabels" . }}
{{- end -}}
{{- end -}}
