{{/* The chart name, or nameOverride. */}}
{{- define "spotshift.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects: fullnameOverride, else RELEASE-CHART (just RELEASE when it
already contains the chart name). Truncated to 63 characters, the DNS label limit.
*/}}
{{- define "spotshift.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "spotshift.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels on every object. */}}
{{- define "spotshift.labels" -}}
helm.sh/chart: {{ include "spotshift.chart" . }}
{{ include "spotshift.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: spotshift
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The labels that select the operator's pods (immutable in a Deployment: keep them stable). */}}
{{- define "spotshift.selectorLabels" -}}
app.kubernetes.io/name: {{ include "spotshift.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "spotshift.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "spotshift.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository@digest when a digest is given, else repository:tag (the appVersion by default). */}}
{{- define "spotshift.image" -}}
{{- $repository := required "image.repository is required" .Values.image.repository }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* Values that cannot work together fail the install with a message, not a broken Deployment. */}}
{{- define "spotshift.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicaCount above 1 needs leaderElection.enabled: two operators without a Lease would drain at the same time" }}
{{- end }}
{{- end }}
