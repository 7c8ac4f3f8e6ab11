{{- define "goreka.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "goreka.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "goreka.labels" -}}
{{ include "goreka.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
{{- end -}}

{{- define "goreka.headless" -}}
{{ include "goreka.fullname" . }}-headless
{{- end -}}

{{- define "goreka.secretName" -}}
{{- if .Values.auth.existingSecret -}}
{{ .Values.auth.existingSecret }}
{{- else -}}
{{ include "goreka.fullname" . }}-auth
{{- end -}}
{{- end -}}

{{- define "goreka.tlsSecret" -}}
{{- if .Values.tls.secretName -}}
{{ .Values.tls.secretName }}
{{- else -}}
{{ include "goreka.fullname" . }}-tls
{{- end -}}
{{- end -}}
