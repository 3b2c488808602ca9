{{/* The chart name, or nameOverride. */}}
{{- define "cw.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The full name: fullnameOverride, else release-chart (the release name alone when it holds the chart name). */}}
{{- define "cw.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "cw.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every resource. */}}
{{- define "cw.labels" -}}
helm.sh/chart: {{ include "cw.chart" . }}
app.kubernetes.io/name: {{ include "cw.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: concordance-worker
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "ingest"). */}}
{{- define "cw.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cw.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Labels of one component's resources. */}}
{{- define "cw.componentLabels" -}}
{{ include "cw.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "cw.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "cw.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The image reference: repository@digest, else repository:tag (tag defaults to appVersion). */}}
{{- define "cw.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The Secret the pods read: existingSecret, else the chart's own. */}}
{{- define "cw.secretName" -}}
{{- default (printf "%s-secrets" (include "cw.fullname" .)) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* SHUTDOWN_GRACE_MS: 5 s under terminationGracePeriodSeconds (never under 1 s). */}}
{{- define "cw.shutdownGraceMs" -}}
{{- max 1000 (mul (sub (int .Values.terminationGracePeriodSeconds) 5) 1000) -}}
{{- end -}}

{{/* The simulator Service's URL. */}}
{{- define "cw.simulatorUrl" -}}
{{- printf "http://%s-simulator:%d" (include "cw.fullname" .) (int .Values.simulator.port) -}}
{{- end -}}

{{/* The rendered --config file: values' config, plus what the chart decides. */}}
{{- define "cw.configYaml" -}}
{{- $config := deepCopy .Values.config -}}
{{- $chart := dict "hl7v2" (dict "mllp" (dict "enabled" .Values.ingest.mllp.enabled "host" "0.0.0.0")) "ingest" (dict "host" "0.0.0.0") "worker" (dict "host" "0.0.0.0") -}}
{{- toYaml (mustMergeOverwrite $config $chart) -}}
{{- end -}}

{{/* Secret keys each role reads (only those). */}}
{{- define "cw.secretKeys.ingest" -}}INGEST_TOKENS,ADMIN_TOKENS,QUEUE_VIEW_TOKENS,CROSSWALK_KEY,FHIR_TOKEN,TERMINOLOGY_TOKEN,REDIS_URL{{- end -}}
{{- define "cw.secretKeys.worker" -}}SERVICE_API_KEY,CROSSWALK_KEY,WEBHOOK_SECRET,OUTBOUND_KEY,PREVENT_ID_KEY,REDIS_URL{{- end -}}

{{/* Environment of a pipeline container: (dict "root" $ "role" "ingest"|"worker"). */}}
{{- define "cw.env" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- range $key := splitList "," (include (printf "cw.secretKeys.%s" .role) $root) }}
- name: {{ $key }}
  valueFrom:
    secretKeyRef:
      name: {{ include "cw.secretName" $root }}
      key: {{ $key }}
      optional: true
{{- end }}
- name: REDIS_PREFIX
  value: {{ $v.redis.prefix | quote }}
- name: REDIS_PARTITIONS
  value: {{ $v.redis.partitions | quote }}
{{- if $v.redis.cluster.nodes }}
- name: REDIS_CLUSTER_NODES
  value: {{ join "," $v.redis.cluster.nodes | quote }}
{{- end }}
- name: REDIS_COMMAND_TIMEOUT_MS
  value: {{ $v.redis.commandTimeoutMs | quote }}
{{- if $v.redis.tls.existingSecret }}
- name: REDIS_TLS_CA_FILE
  value: /etc/concordance-worker/redis-tls/ca.crt
{{- if $v.redis.tls.clientCertificate }}
- name: REDIS_TLS_CERT_FILE
  value: /etc/concordance-worker/redis-tls/tls.crt
- name: REDIS_TLS_KEY_FILE
  value: /etc/concordance-worker/redis-tls/tls.key
{{- end }}
{{- end }}
- name: METRICS_PORT
  value: {{ $v.healthPort | quote }}
- name: SHUTDOWN_GRACE_MS
  value: {{ include "cw.shutdownGraceMs" $root | quote }}
{{- if eq .role "ingest" }}
- name: INGEST_PORT
  value: {{ $v.ingest.port | quote }}
- name: MLLP_PORT
  value: {{ $v.ingest.mllp.port | quote }}
{{- if $v.ingest.tls.existingSecret }}
- name: INGEST_TLS_CERT_FILE
  value: /etc/concordance-worker/ingest-tls/tls.crt
- name: INGEST_TLS_KEY_FILE
  value: /etc/concordance-worker/ingest-tls/tls.key
- name: INGEST_TLS_CLIENT_CERTIFICATES
  value: {{ $v.ingest.tls.clientCertificates | quote }}
{{- if ne $v.ingest.tls.clientCertificates "none" }}
- name: INGEST_TLS_CA_FILE
  value: /etc/concordance-worker/ingest-tls/ca.crt
{{- end }}
{{- end }}
{{- if include "cw.mllpTls" $root }}
- name: MLLP_TLS_CERT_FILE
  value: /etc/concordance-worker/mllp-tls/tls.crt
- name: MLLP_TLS_KEY_FILE
  value: /etc/concordance-worker/mllp-tls/tls.key
- name: MLLP_TLS_CLIENT_CERTIFICATES
  value: {{ $v.ingest.mllp.tls.clientCertificates | quote }}
{{- if ne $v.ingest.mllp.tls.clientCertificates "none" }}
- name: MLLP_TLS_CA_FILE
  value: /etc/concordance-worker/mllp-tls/ca.crt
{{- end }}
{{- end }}
{{- end }}
{{- if and (eq .role "worker") $v.worker.webhook.allowPlainHttp }}
- name: WEBHOOK_ALLOW_PLAIN_HTTP
  value: "true"
{{- end }}
{{- if and (eq .role "worker") $v.simulator.enabled $v.simulator.wireWorkers }}
- name: SERVICE_BASE_URL
  value: {{ include "cw.simulatorUrl" $root | quote }}
{{- end }}
{{- with $v.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* "true" when the MLLP listener serves TLS (its Secret is set and MLLP is on), else empty. */}}
{{- define "cw.mllpTls" -}}
{{- if and .Values.ingest.mllp.enabled .Values.ingest.mllp.tls.existingSecret -}}true{{- end -}}
{{- end -}}

{{/* The ingest pod's listener certificates (HTTP, MLLP), as volumes. */}}
{{- define "cw.ingestTlsVolumes" -}}
{{- if .Values.ingest.tls.existingSecret }}
- name: ingest-tls
  secret:
    secretName: {{ .Values.ingest.tls.existingSecret }}
{{- end }}
{{- if include "cw.mllpTls" . }}
- name: mllp-tls
  secret:
    secretName: {{ .Values.ingest.mllp.tls.existingSecret }}
{{- end }}
{{- end -}}

{{/* ... and their read-only mounts. */}}
{{- define "cw.ingestTlsVolumeMounts" -}}
{{- if .Values.ingest.tls.existingSecret }}
- name: ingest-tls
  mountPath: /etc/concordance-worker/ingest-tls
  readOnly: true
{{- end }}
{{- if include "cw.mllpTls" . }}
- name: mllp-tls
  mountPath: /etc/concordance-worker/mllp-tls
  readOnly: true
{{- end }}
{{- end -}}

{{/*
Combinations of values the schema cannot refuse; rendering fails with what to do instead.
Included by the ingest Deployment, which every install renders.
*/}}
{{- define "cw.validate" -}}
{{- $v := .Values -}}
{{- if and $v.secrets.existingSecret $v.redis.url -}}
{{- fail "redis.url cannot be used with secrets.existingSecret (the chart makes no Secret then, so the URL would be dropped): put REDIS_URL into the Secret named by secrets.existingSecret and unset redis.url" -}}
{{- end -}}
{{- if and (ne $v.ingest.tls.clientCertificates "none") (not $v.ingest.tls.existingSecret) -}}
{{- fail "ingest.tls.clientCertificates needs ingest.tls.existingSecret: a Secret with tls.crt, tls.key and the ca.crt that signs the clients' certificates" -}}
{{- end -}}
{{- if and (ne $v.ingest.mllp.tls.clientCertificates "none") (not $v.ingest.mllp.tls.existingSecret) -}}
{{- fail "ingest.mllp.tls.clientCertificates needs ingest.mllp.tls.existingSecret: a Secret with tls.crt, tls.key and the ca.crt that signs the senders' certificates" -}}
{{- end -}}
{{- if and $v.ingest.ingress.enabled (not $v.ingest.ingress.hosts) -}}
{{- fail "ingest.ingress.enabled needs at least one host in ingest.ingress.hosts" -}}
{{- end -}}
{{- if and $v.prometheusRule.enabled (not $v.prometheusRule.runbookBaseUrl) -}}
{{- fail "prometheusRule.enabled needs prometheusRule.runbookBaseUrl: the absolute URL of docs/operations.md as your staff open it (e.g. https://git.hospital.example/clinical/concordance-worker/-/blob/v0.2.0/docs/operations.md); every alert's runbook_url is that URL plus the alert's anchor" -}}
{{- end -}}
{{- end -}}

{{/* Volumes of a pipeline pod. */}}
{{- define "cw.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
- name: config
  configMap:
    name: {{ include "cw.fullname" . }}-config
{{- if .Values.redis.tls.existingSecret }}
- name: redis-tls
  secret:
    secretName: {{ .Values.redis.tls.existingSecret }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Volume mounts of a pipeline container. */}}
{{- define "cw.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: config
  mountPath: /etc/concordance-worker/config
  readOnly: true
{{- if .Values.redis.tls.existingSecret }}
- name: redis-tls
  mountPath: /etc/concordance-worker/redis-tls
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Probes on the health port. */}}
{{- define "cw.probes" -}}
startupProbe:
  httpGet: { path: /healthz, port: health }
  periodSeconds: {{ .Values.probes.startup.periodSeconds }}
  failureThreshold: {{ .Values.probes.startup.failureThreshold }}
livenessProbe:
  httpGet: { path: /healthz, port: health }
  periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
  timeoutSeconds: {{ .Values.probes.liveness.timeoutSeconds }}
  failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
readinessProbe:
  httpGet: { path: /readyz, port: health }
  periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
  timeoutSeconds: {{ .Values.probes.readiness.timeoutSeconds }}
  failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
{{- end -}}

{{/* Pod-level settings shared by every pod: (dict "root" $ "component" "worker"). */}}
{{- define "cw.podSpecCommon" -}}
{{- $v := .root.Values -}}
serviceAccountName: {{ include "cw.serviceAccountName" .root }}
automountServiceAccountToken: {{ $v.serviceAccount.automountServiceAccountToken }}
terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
enableServiceLinks: false
securityContext:
  {{- toYaml $v.podSecurityContext | nindent 2 }}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $v.topologySpread.enabled }}
topologySpreadConstraints:
{{- range $key := $v.topologySpread.topologyKeys }}
  - maxSkew: {{ $v.topologySpread.maxSkew }}
    topologyKey: {{ $key }}
    whenUnsatisfiable: {{ $v.topologySpread.whenUnsatisfiable }}
    labelSelector:
      matchLabels:
        {{- include "cw.selectorLabels" (dict "root" $.root "component" $.component) | nindent 8 }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Pod annotations: the values' plus checksums, so that a config or secret change rolls the pods. */}}
{{- define "cw.podAnnotations" -}}
checksum/config: {{ include "cw.configYaml" . | sha256sum }}
{{- if not .Values.secrets.existingSecret }}
checksum/secret: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end }}
{{- with .Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}
