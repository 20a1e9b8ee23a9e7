{{/*
The sidecar's named templates for a pod: the container in its two forms, its volumes, its PVC and the config
checksum. Each public one takes a chart's root context, this chart's or a parent's (see _helpers.tpl).
*/}}

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
