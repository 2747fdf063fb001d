{{- define "topogang.daemonName" -}}topogangd{{- end -}}
{{- define "topogang.httpPort" -}}{{ .Values.config.daemon.http_port | default 8888 }}{{- end -}}
{{- define "topogang.grpcPort" -}}{{ (splitList ":" .Values.config.daemon.grpc.address) | last }}{{- end -}}
{{- define "topogang.labels" -}}
app.kubernetes.io/part-of: topogang
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
{{- /* .Values.config with daemon.leader_election filled from .Values.leaderElection. */ -}}
{{- define "topogang.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- $le := .Values.leaderElection -}}
{{- $_ := set $config.daemon "leader_election" (dict "enabled" $le.enabled "lease_name" $le.leaseName "lease_namespace" .Release.Namespace "lease_duration_ms" $le.leaseDurationMs "renew_deadline_ms" $le.renewDeadlineMs "retry_period_ms" $le.retryPeriodMs) -}}
{{- toYaml $config -}}
{{- end -}}
