{{- define "topogang.daemonName" -}}topogangd{{- end -}}
{{- define "topogang.httpPort" -}}{{ .Values.config.daemon.http_port | default 8888 }}{{- end -}}
{{- define "topogang.grpcPort" -}}{{ (splitList ":" .Values.config.daemon.grpc.address) | last }}{{- end -}}
{{- define "topogang.labels" -}}
app.kubernetes.io/part-of: topogang
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}
{{- /* The images scripts/build-images.sh builds: REPOSITORY:TAG, TAG defaulting to appVersion. */ -}}
{{- define "topogang.image" -}}
{{- .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- define "topogang.agentImage" -}}
{{- .Values.agent.image.repository }}:{{ .Values.agent.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- define "topogang.schedulerImage" -}}
{{- if .Values.scheduler.image -}}
{{- .Values.scheduler.image -}}
{{- else -}}
registry.k8s.io/kube-scheduler:{{ regexFind "^v[0-9]+\\.[0-9]+\\.[0-9]+" .Capabilities.KubeVersion.Version }}
{{- end -}}
{{- end -}}
{{- /* Where daemon.agentTokensSecret is mounted; token_file below points into it. Not under
       /etc/topogang: a mount point inside the read-only ConfigMap volume cannot be created. */ -}}
{{- define "topogang.tokensDir" -}}/etc/topogang-tokens{{- end -}}
{{- /* Where topogangd's TLS Secret is mounted (a directory, no subPath, so the kubelet's
       ..data swap reaches the pod and daemon.tls.reload_interval_ms picks it up), and where
       kube-scheduler's client Secret is. */ -}}
{{- define "topogang.tlsDir" -}}/etc/topogang-tls{{- end -}}
{{- define "topogang.schedulerTlsDir" -}}/etc/topogang-client{{- end -}}
{{- define "topogang.tlsServerSecret" -}}
{{- if eq .Values.tls.mode "secret" }}{{ .Values.tls.secret.server }}{{ else }}topogangd-tls{{ end -}}
{{- end -}}
{{- define "topogang.tlsClientSecret" -}}
{{- if eq .Values.tls.mode "secret" }}{{ .Values.tls.secret.client }}{{ else }}{{ .Values.scheduler.name }}-client-tls{{ end -}}
{{- end -}}
{{- /* Probes and the Prometheus scrape go to the plain-HTTP health port when the extender port
       speaks TLS (kubelet and Prometheus have no client certificate). */ -}}
{{- define "topogang.probePort" -}}{{ if .Values.tls.enabled }}health{{ else }}http{{ end }}{{- end -}}
{{- define "topogang.metricsPort" -}}{{ if .Values.tls.enabled }}{{ .Values.tls.healthPort }}{{ else }}{{ include "topogang.httpPort" . }}{{ end }}{{- end -}}
{{- define "topogang.extenderScheme" -}}{{ if .Values.tls.enabled }}https{{ else }}http{{ end }}{{- end -}}
{{- /* The Issuer of both certificates: tls.certManager.issuer, or the bootstrapped topogang-ca. */ -}}
{{- define "topogang.issuerRef" -}}
{{- $i := .Values.tls.certManager.issuer | default dict -}}
{{- if $i.name -}}
name: {{ $i.name }}
kind: {{ $i.kind | default "Issuer" }}
group: {{ $i.group | default "cert-manager.io" }}
{{- else -}}
name: topogang-ca
kind: Issuer
group: cert-manager.io
{{- end -}}
{{- end -}}
{{- define "topogang.checkTls" -}}
{{- if .Values.tls.enabled -}}
{{- if not (has .Values.tls.mode (list "certManager" "secret")) -}}
{{- fail (printf "tls.mode must be certManager or secret, got %q" .Values.tls.mode) -}}
{{- end -}}
{{- if and (eq .Values.tls.mode "secret") (not .Values.tls.secret.server) -}}
{{- fail "tls.mode=secret needs tls.secret.server (a Secret with tls.crt, tls.key, ca.crt for topogangd)" -}}
{{- end -}}
{{- if and (eq .Values.tls.mode "secret") .Values.scheduler.enabled (not .Values.tls.secret.client) -}}
{{- fail "tls.mode=secret with scheduler.enabled needs tls.secret.client (kube-scheduler's tls.crt, tls.key, ca.crt)" -}}
{{- end -}}
{{- if eq (int .Values.tls.healthPort) (int (include "topogang.httpPort" .)) -}}
{{- fail "tls.healthPort must differ from config.daemon.http_port" -}}
{{- end -}}
{{- end -}}
{{- if not (has .Values.daemon.gangBarrier (list "auto" "topogang")) -}}
{{- fail (printf "daemon.gangBarrier must be auto or topogang, got %q" .Values.daemon.gangBarrier) -}}
{{- end -}}
{{- end -}}
{{- /* .Values.config with daemon.leader_election filled from .Values.leaderElection, and the
       gRPC identity settings from daemon.agentTokensSecret / agent.allowUnauthenticated /
       agent.serviceAccountToken / daemon.drainRbac, and
       daemon.tls / daemon.health_port from tls.
       tests/deploy/check-deploy.sh mirrors exactly these `set`s to run topogangd on the result. */ -}}
{{- define "topogang.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- $le := .Values.leaderElection -}}
{{- $_ := set $config.daemon "leader_election" (dict "enabled" $le.enabled "lease_name" $le.leaseName "lease_namespace" .Release.Namespace "lease_duration_ms" $le.leaseDurationMs "renew_deadline_ms" $le.renewDeadlineMs "retry_period_ms" $le.retryPeriodMs) -}}
{{- if .Values.daemon.agentTokensSecret -}}
{{- if not $config.daemon.grpc -}}
{{- fail "daemon.agentTokensSecret needs config.daemon.grpc (the token file is the gRPC server's)" -}}
{{- end -}}
{{- $_ := set $config.daemon.grpc "token_file" (printf "%s/agent-tokens" (include "topogang.tokensDir" .)) -}}
{{- end -}}
{{- /* Only into an existing daemon.grpc: without one, topogang.checkAgent (agent.yaml, which helm
       renders after daemon.yaml) refuses agent.enabled with its own message. */ -}}
{{- if and .Values.agent.enabled .Values.agent.allowUnauthenticated $config.daemon.grpc -}}
{{- $_ := set $config.daemon.grpc "allow_unauthenticated_agents" true -}}
{{- end -}}
{{- /* Agents identified by their projected ServiceAccount token, and drain callers by theirs
       (TokenReview); drain/undrain allowed by RBAC (SubjectAccessReview). */ -}}
{{- if and $config.daemon.grpc (or (include "topogang.agentSaTokens" .) .Values.daemon.drainRbac) -}}
{{- $_ := set $config.daemon.grpc "token_review" (dict "audiences" (list .Values.agent.serviceAccountToken.audience) "agent_service_accounts" (list (printf "%s/topogang-agent" .Release.Namespace))) -}}
{{- end -}}
{{- if and $config.daemon.grpc .Values.daemon.drainRbac -}}
{{- $_ := set $config.daemon.grpc "access_review" (dict) -}}
{{- end -}}
{{- if .Values.tls.enabled -}}
{{- $tls := dict -}}
{{- $_ := set $tls "cert_file" (printf "%s/tls.crt" (include "topogang.tlsDir" .)) -}}
{{- $_ := set $tls "key_file" (printf "%s/tls.key" (include "topogang.tlsDir" .)) -}}
{{- if .Values.tls.clientAuth -}}
{{- $_ := set $tls "client_ca_file" (printf "%s/ca.crt" (include "topogang.tlsDir" .)) -}}
{{- end -}}
{{- $_ := set $tls "reload_interval_ms" .Values.tls.reloadIntervalMs -}}
{{- $_ := set $config.daemon "tls" $tls -}}
{{- $_ := set $config.daemon "health_port" .Values.tls.healthPort -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}
{{- /* "true" when the agents prove who they are with their projected ServiceAccount token (the
       default); per-node token Secrets (agent.tokenSecret) take precedence when given. */ -}}
{{- define "topogang.agentSaTokens" -}}
{{- if and .Values.agent.enabled .Values.agent.serviceAccountToken.enabled (not .Values.agent.tokenSecret) -}}true{{- end -}}
{{- end -}}
{{- /* An agent needs an identity topogangd accepts: refuse to render one that would be rejected. */ -}}
{{- define "topogang.checkAgent" -}}
{{- if .Values.agent.enabled -}}
{{- if not .Values.config.daemon.grpc -}}
{{- fail "agent.enabled needs config.daemon.grpc (the agents talk gRPC to topogangd)" -}}
{{- end -}}
{{- if and (not .Values.agent.allowUnauthenticated) (not (and .Values.agent.tokenSecret .Values.daemon.agentTokensSecret)) (not (include "topogang.agentSaTokens" .)) -}}
{{- fail "agent.enabled needs agent.tokenSecret and daemon.agentTokensSecret (per-node tokens, docs/deploy.md), agent.serviceAccountToken.enabled (projected ServiceAccount tokens, Kubernetes 1.30+), or agent.allowUnauthenticated=true (demos)" -}}
{{- end -}}
{{- end -}}
{{- end -}}
