{{/* The chart name, or nameOverride: the app.kubernetes.io/name label. */}}
{{- define "baseten-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Every object's name prefix: the release name, as in the Go operator's chart. */}}
{{- define "baseten-operator.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Namespace of every namespaced object. */}}
{{- define "baseten-operator.namespace" -}}
{{- default .Release.Namespace .Values.namespace.name -}}
{{- end -}}

{{- define "baseten-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (printf "%s-controller-manager" (include "baseten-operator.fullname" .)) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "baseten-operator.selectorLabels" -}}
control-plane: controller-manager
app.kubernetes.io/name: {{ include "baseten-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "baseten-operator.labels" -}}
{{ include "baseten-operator.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Labels of cluster-wide and RBAC objects (no control-plane label, as in config/). */}}
{{- define "baseten-operator.commonLabels" -}}
app.kubernetes.io/name: {{ include "baseten-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "baseten-operator.metricsServiceName" -}}
{{- printf "%s-controller-manager-metrics-service" (include "baseten-operator.fullname" .) -}}
{{- end -}}

{{/* The Service's and container's metrics port name: https when served over TLS. */}}
{{- define "baseten-operator.metricsPortName" -}}
{{- ternary "https" "metrics" .Values.metrics.secure -}}
{{- end -}}

{{/* The Secret with the metrics serving certificate, if any. */}}
{{- define "baseten-operator.metricsCertSecret" -}}
{{- if and .Values.metrics.certManager.enabled .Values.metrics.certSecretName -}}
{{- fail "metrics.certSecretName and metrics.certManager.enabled exclude each other" -}}
{{- else if .Values.metrics.certManager.enabled -}}
{{- printf "%s-metrics-server-cert" (include "baseten-operator.fullname" .) -}}
{{- else -}}
{{- .Values.metrics.certSecretName -}}
{{- end -}}
{{- end -}}

{{/* A subject binding a role to the manager's ServiceAccount. */}}
{{- define "baseten-operator.subjects" -}}
subjects:
  - kind: ServiceAccount
    name: {{ include "baseten-operator.serviceAccountName" . }}
    namespace: {{ include "baseten-operator.namespace" . }}
{{- end -}}
