{{- define "topogang.daemonName" -}}topogangd{{- end -}}
{{- define "topogang.httpPort" -}}{{ .Values.config.daemon.http_port | default 8888 }}{{- end -}}
{{- define "topogang.grpcPort" -}}{{ (splitList ":" .Values.config.daemon.grpc.address) | last }}{{- end -}}
{{- define "topogang.labels" -}}
app.kubernetes.io/part-of: topogang
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
