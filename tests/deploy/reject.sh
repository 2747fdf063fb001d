#!/usr/bin/env bash
# The negative half of check-deploy.sh: copy what it reads into a scratch tree, break one thing,
# and pass only if the check fails with the expected complaint (so the check is known to be able
# to fail, as layout_check_rejects_a_wrong_include does for the layout check).
#
# usage: reject.sh CASE TOPOGANGD_BIN AGENT_BIN [CLI_BIN]
set -euo pipefail
case_name=${1:?usage: reject.sh CASE TOPOGANGD_BIN AGENT_BIN [CLI_BIN]}
shift
args=(); for a in "$@"; do [[ "$a" == /* ]] && args+=("$a") || args+=("$PWD/$a"); done
set -- "${args[@]}"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$SRC"
cp -r docker deploy helm scripts .dockerignore CMakeLists.txt "$T"/
find . -path ./build -prune -o -path './build-*' -prune -o -name CMakeLists.txt -print |
  while read -r f; do mkdir -p "$T/$(dirname "$f")"; cp "$f" "$T/$f"; done
mkdir -p "$T/extender" && cp extender/http_routes.cc "$T/extender/"
mkdir -p "$T/examples/clusters" && cp examples/clusters/mixed-h100-a100.yaml "$T/examples/clusters/"
cd "$T"
# No control run of the unbroken copy (it doubled the time of every case): deploy_check passes
# on the real tree, and a case passes only if the failure names its own breakage (`want`).

# edit FILE PERL_EXPR: apply the breakage; it must change the file (else the case tests nothing).
edit() {
  cp "$1" "$1.orig"
  perl -0pi -e "$2" "$1"
  if cmp -s "$1" "$1.orig"; then echo "reject.sh: $case_name: edit did not apply to $1"; exit 2; fi
  rm "$1.orig"
}
case "$case_name" in
  unmounted_token_file)   # the bug the chart shipped with: token_file set, no Secret mounted
    edit helm/topogang/values.yaml 's/(      address: 0\.0\.0\.0:9090\n)/$1      token_file: \/secrets\/agent-tokens\n/'
    want='token_file' ;;
  unmounted_tls_cert)     # daemon.tls names /etc/topogang-tls/..., the Secret is mounted elsewhere
    edit helm/topogang/templates/daemon.yaml 's/(name: tls, mountPath: )\{\{ include "topogang.tlsDir" \. \}\}/$1\/etc\/tls/'
    want='chart with tls.enabled: the config names /etc/topogang-tls/tls.crt, which no volume mounts' ;;
  probe_port_under_mtls)  # kubelet has no client certificate: probes on the mTLS port always fail
    edit helm/topogang/templates/_helpers.tpl 's/(define "topogang.probePort" -\}\}\{\{ if \.Values\.tls\.enabled \}\})health/$1http/'
    want='with tls.enabled: probe port http: use the port named health' ;;
  chart_rbac_lacks_gang_rule)  # pods naming a PyTorchJob would get 403 under the chart only
    edit helm/topogang/templates/daemon.yaml 's/  - apiGroups: \[kubeflow\.org\]\n    resources: \[pytorchjobs\]\n    verbs: \[list, watch\]\n//'
    want='the ClusterRole lacks what deploy/rbac.yaml grants: kubeflow.org pytorchjobs list' ;;
  misspelt_alert_metric)  # an alert on a metric topogangd does not export never fires
    edit helm/topogang/templates/monitoring.yaml 's/(increase\()topogang_gang_events_total(\{namespace="[^"]*", event="expire")/$1topogang_gang_event_total$2/'
    want='metric topogang_gang_event_total is not in topogangd' ;;
  unknown_config_key)
    edit deploy/topogangd.yaml 's/(      hold_min_gpus: 256[^\n]*\n)/$1      hold_gpus_forever: true\n/'
    want='exited 2 instead of reaching the in-cluster step' ;;
  unknown_flag)
    edit helm/topogang/templates/agent.yaml 's/- --server=/- --server-address=/'
    want='agent has no flag --server-address' ;;
  missing_copy_source)
    edit docker/Dockerfile 's/COPY scripts\/deps\.sh/COPY scripts\/install-deps.sh/'
    want='scripts/install-deps.sh: not in the repository' ;;
  entrypoint_not_built)
    edit docker/Dockerfile 's/ENTRYPOINT \["\/usr\/local\/bin\/topogang-agent"\]/ENTRYPOINT ["\/usr\/local\/bin\/gpu-agent"]/'
    want='is not an add_executable' ;;
  image_not_built)
    edit deploy/topogangd.yaml 's/image: topogang\/topogangd:[0-9.]+/image: topogang\/topogangd:latest/'
    want='not one scripts/build-images.sh builds' ;;
  probe_path)
    edit helm/topogang/templates/daemon.yaml 's/path: \/healthz/path: \/livez/'
    want='probe path /livez is not served' ;;
  missing_runtime_library)
    edit docker/Dockerfile 's/(      libprotobuf32 )libsimdjson14 /$1/'
    want='libsimdjson' ;;
  *) echo "reject.sh: unknown case $case_name"; exit 2 ;;
esac

set +e
out=$(DEPLOY_ROOT=$T bash "$SRC/tests/deploy/check-deploy.sh" "$@" 2>&1)
rc=$?
set -e
if [ $rc -eq 0 ]; then
  echo "reject.sh: $case_name: check-deploy.sh passed a broken tree"; echo "$out"; exit 1
fi
if ! grep 'FAIL' <<<"$out" | grep -qF -- "$want"; then
  echo "reject.sh: $case_name: check-deploy.sh failed, but not with '$want':"; echo "$out"; exit 1
fi
echo "reject.sh: $case_name: rejected as expected:"
grep 'FAIL' <<<"$out"
