{{/* The image: its repository must be named (no public image is published). */}}
{{- define "agentprof.image" -}}
{{- $repo := required "image.repository must be set: build and push deploy/kubernetes/Dockerfile's image and name it here (--set image.repository=REGISTRY/agentprof); no public image is published" .Values.image.repository -}}
{{- if not (regexMatch "^[a-z0-9][a-z0-9._/:-]*[a-z0-9]$" $repo) -}}
{{- fail (printf "image.repository %q is not an image reference (REGISTRY/NAME, lowercase)" $repo) -}}
{{- end -}}
{{- printf "%s:%s" $repo (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- define "agentprof.labels" -}}
app.kubernetes.io/name: agentprof
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "agentprof.selector" -}}
app.kubernetes.io/name: agentprof
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
