{{/*
Named templates. The sidecar ones (_sidecar.tpl: egress-agent.containers, .initContainers, .sidecarContainer,
.sidecarVolumes, .volumeClaimTemplate, .configChecksum) are called with a chart's root context: this chart's own (templates/deployment.yaml)
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
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (toString .Values.image.tag) -}}
{{- end -}}
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
{{- if and .Values.networkPolicy.enabled (not .Values.standalone.enabled) -}}
{{- fail "networkPolicy.enabled: only with standalone.enabled; beside the platform a policy selects the platform's pods, so the platform's own policy must let the sidecar reach DNS, the beacon and the proxy" -}}
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

{{/* The pods Prometheus scrapes: metrics.podSelector, or the standalone Deployment's. */}}
{{- define "egress-agent.metricsPodSelector" -}}
{{- if .Values.metrics.podSelector -}}
{{ toYaml .Values.metrics.podSelector }}
{{- else -}}
{{ include "egress-agent.selectorLabels" . }}
{{- end -}}
{{- end -}}
