#!/usr/bin/env bash
# Checks that the container images, deploy/ and the Helm chart fit together and fit the real
# binaries, without a container engine or helm (neither is installable where CI runs):
#
#   1. docker/Dockerfile: every COPY/ADD source exists in the build context (and is not
#      .dockerignore'd) or comes from an earlier build stage; every ENTRYPOINT is a binary the
#      CMake project builds (add_executable) and the stage copied in; every CMake subdirectory
#      is in the context; final stages run as a numeric non-root USER equal to the manifests'
#      runAsUser; each runtime stage's apt packages own every NEEDED soname of the binaries it
#      ships (objdump + dpkg -S on this Debian host; skipped, and said so, where those are absent).
#   2. Images: deploy/*.yaml and the chart reference exactly what scripts/build-images.sh builds
#      (chart tags default to appVersion, which must equal the CMake project version).
#   3. Config: the deploy/ ConfigMap, and the chart's ConfigMap as its `topogang.config` helper
#      renders it (values.yaml `config:` plus the helper's `set`s, read from the template text
#      and applied here; an unrecognised `set` fails the check), are fed to the real topogangd
#      with the manifest's own args. It must get past flags, config, leader election and gRPC
#      config and stop only at "not running in a cluster". Files the config names (token_file,
#      TLS files) must be mounted. Variants: defaults, agent tokens + insecure agents, and
#      tls.enabled (mTLS: daemon.tls + health_port from the helper, the Secret mounted as a
#      directory, never with subPath, so rotation reaches the pod). The chart's ClusterRole
#      grants everything deploy/rbac.yaml grants.
#   4. Flags: every --flag in an args list of a container running our images is in that binary's
#      --help.
#   5. Probes and ports: probe paths are routes of extender/http_routes.cc, on the port named
#      http, which is daemon.http_port, or with tls.enabled on the port named health, which is
#      daemon.health_port (kubelet and Prometheus have no client certificate); kube-scheduler's
#      extender entry under TLS is https with a caFile and client certificate it mounts, and the
#      server certificate names the host it calls; the agent DaemonSet has what NVML injection
#      and GPU nodes need.
#   6. values.schema.json parses, names every top-level key of values.yaml (and, with python3's
#      jsonschema + PyYAML, accepts values.yaml); the NetworkPolicy's peers and ports are the
#      chart's pod labels and port names; every metric the PrometheusRule and the Grafana
#      dashboard use is in the /metrics of the real topogangd, run standalone on a shipped
#      cluster file (examples/clusters/mixed-h100-a100.yaml) on a random local port.
#
# usage: check-deploy.sh TOPOGANGD_BIN AGENT_BIN [CLI_BIN]
# env:   DEPLOY_ROOT  repository root to check (default: two levels above this script); the
#                     negative ctests point it at a broken copy.
set -uo pipefail

TOPOGANGD=${1:?usage: check-deploy.sh TOPOGANGD_BIN AGENT_BIN [CLI_BIN]}
AGENT=${2:?usage: check-deploy.sh TOPOGANGD_BIN AGENT_BIN [CLI_BIN]}
CLI=${3:-}
abs() { [ -z "$1" ] || [[ "$1" == /* ]] && echo "$1" || echo "$PWD/$1"; }
TOPOGANGD=$(abs "$TOPOGANGD"); AGENT=$(abs "$AGENT"); CLI=$(abs "$CLI")
ROOT=${DEPLOY_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT" || exit 1
DF=docker/Dockerfile
CHART=helm/topogang
T=$CHART/templates
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
note() { echo "note: $*"; }

# --- helpers -----------------------------------------------------------------------------------
# yaml_block FILE HEADER_REGEX: the block under the first line matching HEADER_REGEX (lines
# indented deeper than it, blank lines kept), de-indented by the first content line's indent.
yaml_block() {
  awk -v re="$2" '
    !started && $0 ~ re { started = 1; match($0, /^ */); base = RLENGTH; next }
    started {
      if ($0 ~ /^[[:space:]]*$/) { buf = buf "\n"; next }
      match($0, /^ */)
      if (RLENGTH <= base) exit
      if (!ind) ind = RLENGTH
      printf "%s", buf; buf = ""
      print substr($0, ind + 1)
    }' "$1"
}
# value_of FILE KEY: first "KEY: value" scalar (quotes and trailing comments dropped).
value_of() {
  sed -n "s/^[[:space:]]*$2:[[:space:]]*\\(.*\\)\$/\\1/p" "$1" | head -1 |
    sed -e 's/[[:space:]]#.*$//' -e 's/[[:space:]]*$//' -e 's/^"\(.*\)"$/\1/'
}
# flags_of_help BIN: the --flags a binary's --help names.
flags_of_help() { "$1" --help 2>&1 | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; }
executables=$(grep -rhoE 'add_executable\([A-Za-z0-9_-]+' --include=CMakeLists.txt . 2>/dev/null |
  grep -v '^./build' | sed 's/add_executable(//' | sort -u)
is_executable() { grep -qx -- "$1" <<<"$executables"; }

# --- 1. Dockerfile -----------------------------------------------------------------------------
[ -f "$DF" ] || { fail "$DF missing"; echo "$fails failure(s)"; exit 1; }
# Logical lines (backslash continuations joined), comments dropped.
sed -e '/^[[:space:]]*#/d' "$DF" | awk '{ if (sub(/\\[[:space:]]*$/, "")) { acc = acc $0 " "; next } print acc $0; acc = "" }' >"$TMP/df"
ignored() {  # ignored PATH: the path's first component is a plain entry of .dockerignore
  local first=${1%%/*}
  [ -f .dockerignore ] || return 1
  grep -vE '^[[:space:]]*(#|$)' .dockerignore | sed 's:/*$::' | while read -r pat; do
    # shellcheck disable=SC2053  # glob match on purpose (.dockerignore patterns)
    [[ "$first" == $pat || "$1" == $pat ]] && echo hit
  done | grep -q hit
}
stage=""
declare -A stage_parent stage_pkgs stage_bins stage_user stage_text
stages=()
while read -r line; do
  set -f
  # shellcheck disable=SC2206
  words=($line)
  set +f
  ((${#words[@]})) || continue
  kw=${words[0]^^}
  case "$kw" in
    FROM)
      stage=""; parent=${words[1]}
      for ((i = 2; i < ${#words[@]}; i++)); do
        [ "${words[i]^^}" = AS ] && stage=${words[i + 1]}
      done
      [ -n "$stage" ] || stage="#${#stages[@]}"
      stages+=("$stage")
      stage_parent[$stage]=$parent
      ;;
    COPY|ADD)
      from=""; srcs=()
      for ((i = 1; i < ${#words[@]}; i++)); do
        case "${words[i]}" in
          --from=*) from=${words[i]#--from=} ;;
          --*) ;;
          *) srcs+=("${words[i]}") ;;
        esac
      done
      dest=${srcs[-1]}; unset 'srcs[-1]'
      for s in "${srcs[@]}"; do
        if [ -n "$from" ]; then
          if [ -z "${stage_parent[$from]+x}" ]; then
            fail "$DF: $kw --from=$from: no earlier stage named $from"
          elif ! grep -qF -- "$(dirname "$s")" <<<"${stage_text[$from]}"; then
            fail "$DF: $kw --from=$from $s: stage $from never mentions $(dirname "$s")"
          else
            b=$(basename "$s")
            stage_bins[$stage]+="$b=${dest%/}/$b "
          fi
        elif [ ! -e "$s" ]; then
          fail "$DF: $kw $s: not in the repository"
        elif [ "$s" != . ] && ignored "$s"; then
          fail "$DF: $kw $s: excluded by .dockerignore"
        fi
      done
      ;;
    RUN)
      if grep -q 'apt-get install' <<<"$line"; then
        pk=$(sed 's/.*apt-get install//; s/&&.*//' <<<"$line" | tr ' ' '\n' | grep -E '^[a-z0-9][a-z0-9.+-]+$' || true)
        stage_pkgs[$stage]+=" $pk"
      fi
      ;;
    USER) stage_user[$stage]=${words[1]} ;;
    ENTRYPOINT)
      ep=$(sed -n 's/^ENTRYPOINT[[:space:]]*\[[[:space:]]*"\([^"]*\)".*/\1/p' <<<"$line")
      if [ -z "$ep" ]; then
        fail "$DF: stage $stage: ENTRYPOINT must be exec form [\"/path/binary\", ...]"
      elif ! is_executable "$(basename "$ep")"; then
        fail "$DF: stage $stage: ENTRYPOINT $ep is not an add_executable of the CMake project"
      elif ! grep -qF "=$ep " <<<"$(s=$stage; while [ -n "$s" ]; do echo "${stage_bins[$s]:-}"; s=${stage_parent[$s]:-}; [ -n "${stage_parent[$s]+x}" ] || s=""; done) "; then
        fail "$DF: stage $stage: ENTRYPOINT $ep is not copied into the stage from a build stage"
      else
        ok "$DF: stage $stage: ENTRYPOINT $ep (built by CMake, copied from the build stage)"
        entry_stages+=("$stage")
      fi
      ;;
  esac
  [ -n "$stage" ] && stage_text[$stage]+="$line"$'\n'
done <"$TMP/df"
for d in $(sed -n 's/^add_subdirectory(\([A-Za-z0-9_-]*\)).*/\1/p' CMakeLists.txt); do
  ignored "$d" && fail ".dockerignore excludes $d/, which CMakeLists.txt add_subdirectory()s"
done
# Each final (ENTRYPOINT) stage: a numeric non-root USER (inherited from its parent stage too).
declare -A image_user
for s in "${entry_stages[@]:-}"; do
  [ -n "$s" ] || continue
  u=""; p=$s
  while [ -n "$p" ] && [ -z "$u" ]; do u=${stage_user[$p]:-}; p=${stage_parent[$p]:-}; [ -n "${stage_parent[$p]+x}" ] || p=""; done
  uid=${u%%:*}
  if ! [[ "$uid" =~ ^[0-9]+$ ]] || [ "$uid" = 0 ]; then
    fail "$DF: stage $s: USER '$u' must be a numeric non-root UID (runAsNonRoot checks the image's numeric user)"
  else
    image_user[$s]=$uid
  fi
done
# Runtime libraries: each NEEDED soname of a shipped binary belongs to a package the stage (or
# its parents) installs, or to the slim base image's own libc6/libgcc-s1/libstdc++6.
declare -A bin_path=([topogangd]=$TOPOGANGD [topogang-agent]=$AGENT [topogang]=$CLI)
# so_pkg[SONAME]: the Debian package owning it on this host. One dpkg -S for all of them (it
# reads the whole package database per call); every spelling of the path is asked for, since
# usrmerge leaves dpkg knowing some libraries as /lib/... and others as /usr/lib/....
declare -A so_pkg
map_sonames() {
  local so p q cands=() line path pk
  declare -A path_so
  for so in "$@"; do
    p=$(ldconfig -p 2>/dev/null | awk -v l="$so" '$1 == l { print $NF; exit }')
    [ -n "$p" ] || continue
    for q in "$p" "$(readlink -f "$p")" "${p#/usr}" "/usr$p" "$(readlink -f "$p" | sed 's:^/usr::')"; do
      path_so[$q]=$so; cands+=("$q")
    done
  done
  ((${#cands[@]})) || return 0
  while IFS= read -r line; do
    pk=${line%%: *}; path=${line#*: }
    so=${path_so[$path]:-}
    [ -n "$so" ] && [ -z "${so_pkg[$so]:-}" ] && so_pkg[$so]=${pk%%:*}
  done < <(dpkg -S "${cands[@]}" 2>/dev/null)
}
if command -v objdump >/dev/null && command -v dpkg >/dev/null && command -v ldconfig >/dev/null; then
  for s in "${entry_stages[@]:-}"; do
    [ -n "$s" ] || continue
    pkgs="libc6 libgcc-s1 libstdc++6"; bins=""; p=$s
    while [ -n "$p" ]; do
      pkgs+=" ${stage_pkgs[$p]:-}"; bins+=" ${stage_bins[$p]:-}"
      p=${stage_parent[$p]:-}; [ -n "${stage_parent[$p]+x}" ] || p=""
    done
    for entry in $bins; do
      b=${entry%%=*}; path=${bin_path[$b]:-}
      if [ -z "$path" ] || [ ! -x "$path" ]; then
        fail "$DF: stage $s ships $b, but no built $b was given to this check"
        continue
      fi
      missing=""
      needed=$(objdump -p "$path" | awk '/NEEDED/ { print $2 }')
      # shellcheck disable=SC2086
      map_sonames $needed
      for so in $needed; do
        pk=${so_pkg[$so]:-}
        [ -n "$pk" ] || { missing+=" $so(no package on this host)"; continue; }
        grep -qw -- "$pk" <<<"$pkgs" || missing+=" $so($pk)"
      done
      if [ -n "$missing" ]; then
        fail "$DF: stage $s: $b needs libraries its runtime packages do not provide:$missing"
      else
        ok "$DF: stage $s: every NEEDED library of $b comes from its packages"
      fi
    done
  done
else
  note "objdump/dpkg/ldconfig not all present: runtime packages not checked against NEEDED"
fi

# --- 2. Images ---------------------------------------------------------------------------------
app_version=$(value_of $CHART/Chart.yaml appVersion)
cmake_version=$(sed -n 's/^project([^)]*VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ "$app_version" = "$cmake_version" ] ||
  fail "$CHART/Chart.yaml appVersion '$app_version' != CMake project VERSION '$cmake_version'"
built=$(bash scripts/build-images.sh --print-images) || fail "scripts/build-images.sh --print-images failed"
daemon_image=$(grep '/topogangd:' <<<"$built")
agent_image=$(grep '/topogang-agent:' <<<"$built")
[ -n "$daemon_image" ] && [ -n "$agent_image" ] ||
  fail "build-images.sh must build a topogangd and a topogang-agent image, prints: $built"
grep -q -- '--target topogangd\|"topogangd:\$registry/topogangd' scripts/build-images.sh &&
  grep -q 'FROM .* AS topogangd$\|AS topogangd[[:space:]]*$' "$DF" && grep -q 'AS agent[[:space:]]*$' "$DF" ||
  fail "build-images.sh targets (topogangd, agent) and the Dockerfile's stages disagree"
for f in deploy/*.yaml; do
  while read -r img; do
    [ -n "$img" ] || continue
    case "$img" in
      registry.k8s.io/*) ;;  # upstream kube-scheduler
      *) grep -qxF -- "$img" <<<"$built" && ok "$f: image $img is built by build-images.sh" ||
           fail "$f: image $img is not one scripts/build-images.sh builds ($(echo $built))" ;;
    esac
  done < <(sed -n 's/^[[:space:]-]*image:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}.*/\1/p' "$f")
done
grep -q "image: $daemon_image\$" deploy/topogangd.yaml || fail "deploy/topogangd.yaml does not run $daemon_image"
# Chart: repository values + tag defaulting to appVersion, through the two image helpers.
vals=$CHART/values.yaml
repo=$(yaml_block "$vals" '^image:' | sed -n 's/^repository:[[:space:]]*//p')
tag=$(yaml_block "$vals" '^image:' | sed -n 's/^tag:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}.*/\1/p')
arepo=$(yaml_block "$vals" '^agent:' | yaml_block /dev/stdin '^image:' | sed -n 's/^repository:[[:space:]]*//p')
atag=$(yaml_block "$vals" '^agent:' | yaml_block /dev/stdin '^image:' | sed -n 's/^tag:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}.*/\1/p')
[ "$repo:${tag:-$app_version}" = "$daemon_image" ] ||
  fail "$vals: image $repo:${tag:-$app_version} is not $daemon_image"
[ "$arepo:${atag:-$app_version}" = "$agent_image" ] ||
  fail "$vals: agent.image $arepo:${atag:-$app_version} is not $agent_image"
grep -q 'define "topogang.image"' $T/_helpers.tpl &&
  grep -A2 'define "topogang.image"' $T/_helpers.tpl | grep -q '\.Values\.image\.repository }}:{{ \.Values\.image\.tag | default \.Chart\.AppVersion' ||
  fail "$T/_helpers.tpl: topogang.image must be repository:(tag | default .Chart.AppVersion)"
grep -A2 'define "topogang.agentImage"' $T/_helpers.tpl | grep -q '\.Values\.agent\.image\.repository }}:{{ \.Values\.agent\.image\.tag | default \.Chart\.AppVersion' ||
  fail "$T/_helpers.tpl: topogang.agentImage must be agent repository:(tag | default .Chart.AppVersion)"
while IFS= read -r l; do
  grep -qE 'include "topogang\.(image|agentImage|schedulerImage)"' <<<"$l" ||
    fail "$T: image line not through an image helper: $l"
done < <(grep -h '^[[:space:]]*image:' $T/*.yaml)
grep -q 'include "topogang.image"' $T/daemon.yaml || fail "$T/daemon.yaml does not run topogang.image"
grep -q 'include "topogang.agentImage"' $T/agent.yaml || fail "$T/agent.yaml does not run topogang.agentImage"
((fails)) || ok "images: deploy/ and the chart reference exactly $(echo $built)"

# --- 3. Config through the real topogangd ------------------------------------------------------
# run_daemon NAME CONFIG ARGS...: run topogangd with the manifest's args (the in-pod config path
# replaced by CONFIG); it must stop at the in-cluster step, i.e. everything before it passed.
run_daemon() {
  local name=$1 cfg=$2 out rc; shift 2
  out=$(env -u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT timeout 60 "$TOPOGANGD" "$@" 2>&1)
  rc=$?
  if [ $rc -eq 2 ] && grep -q 'not running in a cluster' <<<"$out"; then
    ok "$name: topogangd accepts the args and the config (stopped at: no API server here)"
  else
    fail "$name: topogangd $* exited $rc instead of reaching the in-cluster step: $out"
    sed 's/^/    config: /' "$cfg"
  fi
}
# files_named CONFIG: values of keys that name files the daemon opens.
files_named() { grep -E '^[[:space:]]*(token_file|cert_file|key_file|client_ca_file):' "$1" | sed 's/^[^:]*:[[:space:]]*//; s/[[:space:]]#.*//; s/"//g'; }
# inline_args FILE: the first args: [..] list of FILE, one per line.
inline_args() {
  sed -n 's/^[[:space:]]*args:[[:space:]]*\[\(.*\)\][[:space:]]*$/\1/p' "$1" | head -1 |
    tr ',' '\n' | sed 's/^[[:space:]]*"\{0,1\}//; s/"\{0,1\}[[:space:]]*$//'
}
# container_args FILE: the first args list of FILE (inline [..] or a block of "- item" lines),
# one per line; template lines ({{- if }} ...) between items are skipped.
container_args() {
  local inl
  inl=$(inline_args "$1")
  if [ -n "$inl" ]; then echo "$inl"; return; fi
  awk '
    !on && /^[[:space:]]*args:[[:space:]]*$/ { match($0, /^ */); ai = RLENGTH; on = 1; next }
    on {
      if ($0 ~ /^[[:space:]]*(#|\{\{)/) next
      match($0, /^ */)
      if (RLENGTH < ai || $0 !~ /^[[:space:]]*- /) exit
      s = $0; sub(/^[[:space:]]*- */, "", s); sub(/[[:space:]]+#.*$/, "", s); gsub(/^"|"$/, "", s); print s
    }' "$1"
}
# deploy/: the ConfigMap's config.yaml, the Deployment's args, the mount the args point into.
yaml_block deploy/topogangd.yaml '^[[:space:]]*config\.yaml:[[:space:]]*\|' >"$TMP/deploy.yaml"
mapfile -t dargs < <(container_args deploy/topogangd.yaml)
cfg_path=""; for ((i = 0; i < ${#dargs[@]}; i++)); do [ "${dargs[i]}" = --config ] && cfg_path=${dargs[i + 1]:-}; done
mounts=$(sed -n 's/.*mountPath:[[:space:]]*\([^,} ]*\).*/\1/p' deploy/topogangd.yaml)
if [ -z "$cfg_path" ]; then
  fail "deploy/topogangd.yaml: topogangd args have no --config"
elif ! grep -qxF "$(dirname "$cfg_path")" <<<"$mounts" || [ "$(basename "$cfg_path")" != config.yaml ]; then
  fail "deploy/topogangd.yaml: --config $cfg_path is not the ConfigMap key config.yaml under a mountPath ($mounts)"
fi
run_daemon deploy/topogangd.yaml "$TMP/deploy.yaml" "${dargs[@]/#$cfg_path/$TMP/deploy.yaml}"
for file in $(files_named "$TMP/deploy.yaml"); do
  hit=""; for m in $mounts; do [[ "$file" == "$m"/* ]] && hit=1; done
  [ -n "$hit" ] || fail "deploy/topogangd.yaml: the config names $file, which no volume mounts"
done

# The chart: values.yaml `config:` + what the topogang.config helper `set`s.
helper=$(awk '/define "topogang.config"/ { p = 1; print; next } p && /define "/ { exit } p' $T/_helpers.tpl)
le_vals=$(yaml_block "$vals" '^leaderElection:')
le_yaml=""
dict=$(grep -o 'set $config.daemon "leader_election" (dict [^)]*)' <<<"$helper" | sed 's/.*(dict //; s/)$//')
[ -n "$dict" ] || fail "$T/_helpers.tpl: topogang.config no longer sets daemon.leader_election as this check expects"
set -f
# shellcheck disable=SC2206
toks=($dict)
set +f
for ((i = 0; i + 1 < ${#toks[@]}; i += 2)); do
  k=${toks[i]//\"/}; e=${toks[i + 1]}
  case "$e" in
    '$le.'*) v=$(sed -n "s/^${e#\$le.}:[[:space:]]*\\([^[:space:]#]*\\).*/\\1/p" <<<"$le_vals") ;;
    .Release.Namespace) v=topogang-system ;;
    *) fail "$T/_helpers.tpl: leader_election.$k = $e: an expression this check does not render"; v="" ;;
  esac
  [ -n "$v" ] || fail "$vals: leaderElection has no value for ${e#\$le.} (daemon.leader_election.$k)"
  le_yaml+="$k: $v"$'\n'
done
define_of() { sed -n "s/.*define \"$1\" -}}\([^{]*\){{- end.*/\1/p" $T/_helpers.tpl; }
tokens_dir=$(define_of topogang.tokensDir)
tls_dir=$(define_of topogang.tlsDir)
sched_tls_dir=$(define_of topogang.schedulerTlsDir)
[ -n "$tls_dir" ] && [ -n "$sched_tls_dir" ] ||
  fail "$T/_helpers.tpl: no topogang.tlsDir / topogang.schedulerTlsDir (where the TLS Secrets are mounted)"
tls_vals=$(yaml_block "$vals" '^tls:')
tls_val() { sed -n "s/^$1:[[:space:]]*\"\{0,1\}\([^\"[:space:]#]*\).*/\1/p" <<<"$tls_vals" | head -1; }
grpc_sets=$(grep -o 'set $config.daemon.grpc "[a-z_]*" .*-}}' <<<"$helper")
daemon_sets=$(grep -o 'set $config.daemon "[a-z_]*" .*-}}' <<<"$helper" | grep -v '"leader_election"')
tls_sets=$(grep -o 'set $tls "[a-z_]*" .*-}}' <<<"$helper")
# render_chart OUT WITH_TOKENS WITH_INSECURE [WITH_TLS]: the ConfigMap body for those values
# (WITH_TLS: tls.enabled with the helper's every daemon.tls set, i.e. clientAuth on: mTLS).
render_chart() {
  local out=$1 tokens=$2 insecure=$3 tls=${4:-0} g="" d="" t="" k e v
  while IFS= read -r s; do
    [ -n "$s" ] || continue
    k=$(sed 's/set $tls "\([a-z_]*\)".*/\1/' <<<"$s")
    e=$(sed 's/set $tls "[a-z_]*" \(.*\) -}}$/\1/' <<<"$s")
    case "$e" in
      '(printf "%s/'*'" (include "topogang.tlsDir" .))')
        v=$(sed 's|(printf "%s/\([^"]*\)" (include "topogang.tlsDir" .))|\1|' <<<"$e"); t+="$k: $tls_dir/$v"$'\n' ;;
      .Values.tls.*)
        v=$(tls_val "${e#.Values.tls.}")
        [ -n "$v" ] || fail "$vals: tls has no ${e#.Values.tls.} (daemon.tls.$k)"
        t+="$k: $v"$'\n' ;;
      *) fail "$T/_helpers.tpl: daemon.tls.$k = $e: a set this check does not render" ;;
    esac
  done <<<"$tls_sets"
  while IFS= read -r s; do
    [ -n "$s" ] || continue
    k=$(sed 's/set $config.daemon "\([a-z_]*\)".*/\1/' <<<"$s")
    e=$(sed 's/set $config.daemon "[a-z_]*" \(.*\) -}}$/\1/' <<<"$s")
    case "$k=$e" in
      'tls=$tls') [ "$tls" = 1 ] && d+="tls:"$'\n'"$(sed 's/^/  /' <<<"${t%$'\n'}")"$'\n' ;;
      health_port=.Values.tls.*)
        v=$(tls_val "${e#.Values.tls.}")
        [ -n "$v" ] || fail "$vals: tls has no ${e#.Values.tls.} (daemon.health_port)"
        [ "$tls" = 1 ] && d+="health_port: $v"$'\n' ;;
      *) fail "$T/_helpers.tpl: daemon.$k = $e: a set this check does not render" ;;
    esac
  done <<<"$daemon_sets"
  while IFS= read -r s; do
    [ -n "$s" ] || continue
    k=$(sed 's/set $config.daemon.grpc "\([a-z_]*\)".*/\1/' <<<"$s")
    e=$(sed 's/set $config.daemon.grpc "[a-z_]*" \(.*\) -}}$/\1/' <<<"$s")
    case "$k=$e" in
      'token_file=(printf "%s/agent-tokens" (include "topogang.tokensDir" .))')
        [ "$tokens" = 1 ] && g+="token_file: $tokens_dir/agent-tokens"$'\n' ;;
      'allow_unauthenticated_agents=true') [ "$insecure" = 1 ] && g+="$k: true"$'\n' ;;
      # daemon.drainRbac (default true) turns both on, so every variant here has them.
      'token_review=(dict "audiences" (list .Values.agent.serviceAccountToken.audience) "agent_service_accounts" (list (printf "%s/topogang-agent" .Release.Namespace)))')
        [ "$drain_rbac" = true ] && g+="token_review:"$'\n'"  audiences: [$sa_audience]"$'\n'"  agent_service_accounts: [topogang-system/topogang-agent]"$'\n' ;;
      'access_review=(dict)') [ "$drain_rbac" = true ] && g+="access_review: {}"$'\n' ;;
      *) fail "$T/_helpers.tpl: daemon.grpc.$k = $e: a set this check does not render" ;;
    esac
  done <<<"$grpc_sets"
  yaml_block "$vals" '^config:' | awk -v le="$le_yaml" -v g="$g" -v d="$d" '
    function emit(block, ind,   n, a, i) { n = split(block, a, "\n"); for (i = 1; i <= n; i++) if (a[i] != "") print ind a[i] }
    { print }
    /^daemon:[[:space:]]*(#.*)?$/ { print "  leader_election:"; emit(le, "    "); emit(d, "  ") }
    /^  grpc:[[:space:]]*(#.*)?$/ { emit(g, "    ") }' >"$out"
}
if yaml_block "$vals" '^config:' | grep -qE '^  (leader_election|tls|health_port|grpc:.*token_file)|^    (token_file|allow_unauthenticated_agents):'; then
  fail "$vals: config sets leader_election/tls/health_port/token_file/allow_unauthenticated_agents, which the chart derives (a token_file or TLS file with no Secret mounted makes topogangd exit 2)"
fi
drain_rbac=$(yaml_block "$vals" '^daemon:' | sed -n 's/^drainRbac:[[:space:]]*\([a-z]*\).*/\1/p')
sa_audience=$(yaml_block "$vals" '^agent:' | yaml_block /dev/stdin '^serviceAccountToken:' | sed -n 's/^audience:[[:space:]]*\([^[:space:]#]*\).*/\1/p')
[ -n "$drain_rbac" ] && [ -n "$sa_audience" ] ||
  fail "$vals: daemon.drainRbac or agent.serviceAccountToken.audience missing (daemon.grpc.token_review/access_review)"
cargs=()
gang_barrier=$(yaml_block "$vals" '^daemon:' | sed -n 's/^gangBarrier:[[:space:]]*"\{0,1\}\([a-z]*\).*/\1/p')
mapfile -t cargs < <(container_args $T/daemon.yaml | sed "s/{{ \.Values\.daemon\.gangBarrier }}/$gang_barrier/g")
grep -q '{{' <<<"${cargs[*]}" && fail "$T/daemon.yaml: topogangd args contain template expressions this check cannot render: ${cargs[*]}"
grep -qx -- "--gang-barrier=$gang_barrier" < <(printf '%s\n' "${cargs[@]}") ||
  fail "$T/daemon.yaml: topogangd gets no --gang-barrier=\$(daemon.gangBarrier) (values: '$gang_barrier')"
cpath=""; for ((i = 0; i < ${#cargs[@]}; i++)); do [ "${cargs[i]}" = --config ] && cpath=${cargs[i + 1]:-}; done
grep -q "mountPath: $(dirname "${cpath:-/x/y}")," $T/daemon.yaml ||
  fail "$T/daemon.yaml: --config ${cpath:-?} is not under the config volume's mountPath"
render_chart "$TMP/chart-default.yaml" 0 0
run_daemon "chart defaults" "$TMP/chart-default.yaml" "${cargs[@]/#$cpath/$TMP/chart-default.yaml}"
for file in $(files_named "$TMP/chart-default.yaml"); do
  fail "chart defaults: the config names $file, but with default values only the ConfigMap is mounted"
done
render_chart "$TMP/chart-secured.yaml" 1 1
run_daemon "chart with agentTokensSecret + agent.allowUnauthenticated" "$TMP/chart-secured.yaml" \
  "${cargs[@]/#$cpath/$TMP/chart-secured.yaml}"
# The token file must be where daemon.yaml mounts the Secret, under the same condition.
grep -q "token_file: $tokens_dir/agent-tokens" "$TMP/chart-secured.yaml" ||
  fail "chart: daemon.agentTokensSecret does not set daemon.grpc.token_file"
cond=$(awk '/\{\{-? *if /{c=$0} /mountPath: \{\{ include "topogang.tokensDir"/{print c; exit}' $T/daemon.yaml)
grep -q 'Values.daemon.agentTokensSecret' <<<"$cond" ||
  fail "$T/daemon.yaml: the tokens Secret is not mounted at topogang.tokensDir under 'if .Values.daemon.agentTokensSecret'"
grep -q 'secretName: {{ .Values.daemon.agentTokensSecret }}' $T/daemon.yaml ||
  fail "$T/daemon.yaml: no volume from daemon.agentTokensSecret"
[[ "$tokens_dir" == /etc/topogang/* || "$tokens_dir" == /etc/topogang ]] &&
  fail "$T/_helpers.tpl: tokensDir $tokens_dir is inside the read-only ConfigMap mount /etc/topogang"
[[ "$tls_dir" == /etc/topogang/* || "$tls_dir" == /etc/topogang ]] &&
  fail "$T/_helpers.tpl: tlsDir $tls_dir is inside the read-only ConfigMap mount /etc/topogang"

# TLS (mTLS): the config the helper renders with tls.enabled goes through the real topogangd too
# (it checks the daemon.tls shape, health_port != http_port, the transport limits), and every
# file it names must be under a volume daemon.yaml mounts under the same condition.
render_chart "$TMP/chart-tls.yaml" 0 0 1
run_daemon "chart with tls.enabled" "$TMP/chart-tls.yaml" "${cargs[@]/#$cpath/$TMP/chart-tls.yaml}"
grep -qE '^  tls:' "$TMP/chart-tls.yaml" && grep -qE '^    cert_file:' "$TMP/chart-tls.yaml" &&
  grep -qE '^    client_ca_file:' "$TMP/chart-tls.yaml" && grep -qE '^  health_port:' "$TMP/chart-tls.yaml" ||
  fail "chart: tls.enabled does not set daemon.tls (cert_file, key_file, client_ca_file) and daemon.health_port"
# chart_mounts FILE: its mountPaths, the helpers' directories rendered (others left as they are).
render_dirs() {
  sed -e "s|{{ include \"topogang.tokensDir\" . }}|$tokens_dir|g" -e "s|{{ include \"topogang.tlsDir\" . }}|$tls_dir|g" \
      -e "s|{{ include \"topogang.schedulerTlsDir\" . }}|$sched_tls_dir|g" "$@"
}
chart_mounts() { render_dirs "$1" | sed -n 's/.*mountPath:[[:space:]]*\([^,}[:space:]]*\).*/\1/p'; }
cmounts=$(chart_mounts $T/daemon.yaml)
for file in $(files_named "$TMP/chart-tls.yaml"); do
  hit=""; for m in $cmounts; do [[ "$file" == "$m"/* ]] && hit=1; done
  [ -n "$hit" ] || fail "chart with tls.enabled: the config names $file, which no volume mounts ($(echo $cmounts))"
done
cond=$(awk '/\{\{-? *if /{c=$0} /mountPath: \{\{ include "topogang.tlsDir"/{print c; exit}' $T/daemon.yaml)
grep -q 'Values.tls.enabled' <<<"$cond" ||
  fail "$T/daemon.yaml: the TLS Secret is not mounted at topogang.tlsDir under 'if .Values.tls.enabled'"
grep -q 'secretName: {{ include "topogang.tlsServerSecret" . }}' $T/daemon.yaml ||
  fail "$T/daemon.yaml: no volume from the topogang.tlsServerSecret Secret"
for f in deploy/*.yaml $T/*.yaml; do
  grep -v '^[[:space:]]*#' "$f" | grep -q 'subPath:' && fail "$f: a subPath mount never sees a Secret's or ConfigMap's updates (TLS rotation): mount the directory"
done

# RBAC: every (apiGroup, resource, verb) deploy/rbac.yaml grants topogangd's ClusterRole, the
# chart's grants too (the gang conventions' list/watch rules were once missing from the chart).
# rbac_triples FILE: "group resource verb" lines of the ClusterRole's rules.
rbac_triples() {
  awk '/^kind: ClusterRole[[:space:]]*$/ { on = 1; next } on && /^---/ { on = 0 }
    on && /apiGroups:/ { g = $0 } on && /resources:/ { r = $0 }
    on && /verbs:/ { print g "@" r "@" $0 }' "$1" | tr -d '"' | sed 's/[^@]*\[\([^]]*\)\][^@]*/\1/g' |
    while IFS=@ read -r gs rs vs; do
      for g in ${gs//,/ }; do for r in ${rs//,/ }; do for v in ${vs//,/ }; do echo "${g:-core} $r $v"; done; done; done
      [[ "$gs" == ,* || "$gs" == "" ]] && for r in ${rs//,/ }; do for v in ${vs//,/ }; do echo "core $r $v"; done; done
    done | sort -u
}
rbac_triples deploy/rbac.yaml >"$TMP/rbac.deploy"
rbac_triples $T/daemon.yaml >"$TMP/rbac.chart"
missing=$(comm -23 "$TMP/rbac.deploy" "$TMP/rbac.chart" | tr '\n' ';')
if [ ! -s "$TMP/rbac.deploy" ] || [ ! -s "$TMP/rbac.chart" ]; then
  fail "no ClusterRole rules read from deploy/rbac.yaml or $T/daemon.yaml"
elif [ -n "$missing" ]; then
  fail "$T/daemon.yaml: the ClusterRole lacks what deploy/rbac.yaml grants: $missing"
else
  ok "$T/daemon.yaml: the ClusterRole grants everything deploy/rbac.yaml does ($(wc -l <"$TMP/rbac.deploy") rules)"
fi

# --- 4. Flags ----------------------------------------------------------------------------------
flags_of_help "$TOPOGANGD" >"$TMP/topogangd.flags"
flags_of_help "$AGENT" >"$TMP/agent.flags"
[ -s "$TMP/topogangd.flags" ] && [ -s "$TMP/agent.flags" ] || fail "no --help output from $TOPOGANGD / $AGENT"
# Print "binary flag" for every --flag in an args: list, the binary told by the container's image.
for f in deploy/*.yaml $T/*.yaml; do
  awk -v file="$f" '
    function bin(img) { return img ~ /agent/ ? "agent" : (img ~ /topogangd|topogang\.image/ ? "topogangd" : "") }
    /^[[:space:]]*-?[[:space:]]*image:/ { img = $0; inargs = 0 }
    /^[[:space:]]*args:/ {
      match($0, /^ */); ai = RLENGTH; inargs = 1
      line = $0; sub(/^[[:space:]]*args:/, "", line)
      while (match(line, /--[a-z][a-z0-9-]*/)) { print file, bin(img), substr(line, RSTART, RLENGTH); line = substr(line, RSTART + RLENGTH) }
      next
    }
    inargs {
      match($0, /^ */)
      if ($0 ~ /^[[:space:]]*$/ || $0 ~ /^[[:space:]]*(#|\{\{)/) next
      if (RLENGTH < ai || (RLENGTH == ai && $0 !~ /^[[:space:]]*- /)) { inargs = 0; next }
      if ($0 ~ /^[[:space:]]*- +"?--/) { match($0, /--[a-z][a-z0-9-]*/); print file, bin(img), substr($0, RSTART, RLENGTH) }
    }' "$f"
done >"$TMP/used.flags"
while read -r f b flag; do
  [ -n "$b" ] || continue   # not one of our images (kube-scheduler)
  if grep -qxF -- "$flag" "$TMP/$b.flags"; then
    ok "$f: $b $flag"
  else
    fail "$f: $b has no flag $flag (its --help: $(tr '\n' ' ' <"$TMP/$b.flags"))"
  fi
done <"$TMP/used.flags"
grep -q ' topogangd --in-cluster' "$TMP/used.flags" || fail "no topogangd args with --in-cluster found in deploy/ or the chart"
grep -q "$T/agent.yaml agent --server" "$TMP/used.flags" || fail "$T/agent.yaml: the agent gets no --server"

# --- 5. Probes, ports, users, the agent --------------------------------------------------------
routes=$(sed -n 's/.*path == "\(\/[a-z]*\)".*/\1/p' extender/http_routes.cc)
http_port=$(value_of "$TMP/deploy.yaml" http_port)
# The chart's probe port is the topogang.probePort helper: rendered per variant.
pp=$(sed -n 's/.*define "topogang.probePort" -}}{{ if \.Values\.tls\.enabled }}\([a-z]*\){{ else }}\([a-z]*\){{ end }}{{- end.*/\1 \2/p' $T/_helpers.tpl)
[ -n "$pp" ] || fail "$T/_helpers.tpl: topogang.probePort is not '{{ if .Values.tls.enabled }}NAME{{ else }}NAME{{ end }}'"
read -r pp_tls pp_plain <<<"$pp"
sed "s/{{ include \"topogang.probePort\" . }}/$pp_plain/g" $T/daemon.yaml >"$TMP/daemon-plain.yaml"
sed "s/{{ include \"topogang.probePort\" . }}/$pp_tls/g" $T/daemon.yaml >"$TMP/daemon-tls.yaml"
# check_probes FILE LABEL WANT_PORT WHY
check_probes() {
  local f=$1 label=$2 want=$3 why=$4 path port
  while read -r path port; do
    grep -qxF "$path" <<<"$routes" || fail "$label: probe path $path is not served (extender/http_routes.cc serves: $(echo $routes))"
    [ "$port" = "$want" ] || fail "$label: probe port $port: use the port named $want$why"
  done < <(sed -n 's/.*httpGet:[[:space:]]*{path:[[:space:]]*\([^,]*\),[[:space:]]*port:[[:space:]]*\([^,}]*\).*/\1 \2/p' "$f")
  [ "$(grep -c 'httpGet:' "$f")" -ge 2 ] || fail "$label: expected readiness and liveness probes"
}
check_probes deploy/topogangd.yaml deploy/topogangd.yaml http ""
check_probes "$TMP/daemon-plain.yaml" "$T/daemon.yaml" http ""
check_probes "$TMP/daemon-tls.yaml" "$T/daemon.yaml with tls.enabled" health \
  " (daemon.health_port): under mTLS kubelet has no client certificate"
tls_health=$(tls_val healthPort)
grep -q "health_port: $tls_health\$" "$TMP/chart-tls.yaml" ||
  fail "chart with tls.enabled: daemon.health_port is not tls.healthPort ($tls_health)"
awk '/\{\{-? *if /{c=$0} /\{name: health, containerPort: \{\{ \.Values\.tls\.healthPort \}\}\}/{print c; exit}' $T/daemon.yaml |
  grep -q 'Values.tls.enabled' ||
  fail "$T/daemon.yaml: no containerPort named health = tls.healthPort under 'if .Values.tls.enabled'"
grep -q 'prometheus.io/port: {{ include "topogang.metricsPort" . | quote }}' $T/daemon.yaml &&
  grep -q 'define "topogang.metricsPort" -}}{{ if .Values.tls.enabled }}{{ .Values.tls.healthPort }}{{ else }}{{ include "topogang.httpPort" . }}{{ end }}' $T/_helpers.tpl ||
  fail "$T/daemon.yaml: prometheus.io/port is not the health port under tls.enabled and the http port otherwise (topogang.metricsPort)"
# kube-scheduler's side: https, a caFile (else it accepts any server certificate), the client
# certificate, all under its mount of the client Secret; the server certificate names its host.
s=$T/scheduler.yaml
grep -q 'urlPrefix: "{{ include "topogang.extenderScheme" . }}://topogangd\.{{ \.Release\.Namespace }}\.svc:' $s &&
  grep -q 'define "topogang.extenderScheme" -}}{{ if .Values.tls.enabled }}https{{ else }}http{{ end }}' $T/_helpers.tpl ||
  fail "$s: urlPrefix is not https://topogangd.<namespace>.svc under tls.enabled (topogang.extenderScheme)"
tlscfg=$(render_dirs $s | awk '/if \.Values\.tls\.enabled/ { on = 1 } on && /\{\{-? *else/ { exit } on')
grep -q 'enableHTTPS: true' <<<"$tlscfg" || fail "$s: no enableHTTPS: true under tls.enabled"
smounts=$(chart_mounts $s)
for key in caFile certFile keyFile; do
  file=$(sed -n "s/^[[:space:]]*$key:[[:space:]]*\([^[:space:]]*\).*/\1/p" <<<"$tlscfg")
  if [ -z "$file" ]; then fail "$s: no tlsConfig.$key under tls.enabled"; continue; fi
  hit=""; for m in $smounts; do [[ "$file" == "$m"/* ]] && hit=1; done
  [ -n "$hit" ] || fail "$s: tlsConfig.$key $file, which no volume of kube-scheduler mounts ($(echo $smounts))"
done
grep -q 'secretName: {{ include "topogang.tlsClientSecret" . }}' $s || fail "$s: no volume from the topogang.tlsClientSecret Secret"
grep -q -- '- topogangd\.{{ $ns }}\.svc$' $T/tls.yaml && grep -q -- '- topogangd\.{{ $ns }}\.svc\.cluster\.local$' $T/tls.yaml &&
  grep -q '{{- $ns := .Release.Namespace }}' $T/tls.yaml ||
  fail "$T/tls.yaml: topogangd's Certificate does not name topogangd.<namespace>.svc(.cluster.local), the urlPrefix host"
grep -q 'secretName: topogangd-tls' $T/tls.yaml && grep -q 'topogangd-tls' <<<"$(grep -A1 'define "topogang.tlsServerSecret"' $T/_helpers.tpl)" ||
  fail "$T/tls.yaml: topogangd's Certificate Secret is not the one daemon.yaml mounts (topogang.tlsServerSecret)"
grep -q 'secretName: {{ .Values.scheduler.name }}-client-tls' $T/tls.yaml &&
  grep -A1 'define "topogang.tlsClientSecret"' $T/_helpers.tpl | grep -q '{{ .Values.scheduler.name }}-client-tls' ||
  fail "$T/tls.yaml: kube-scheduler's Certificate Secret is not the one scheduler.yaml mounts (topogang.tlsClientSecret)"
grep -q "{name: http, containerPort: $http_port}" deploy/topogangd.yaml ||
  fail "deploy/topogangd.yaml: no containerPort named http = daemon.http_port $http_port"
grep -q "prometheus.io/port: \"$http_port\"" deploy/topogangd.yaml || fail "deploy/topogangd.yaml: scrape port is not $http_port"
grep -q '{name: http, containerPort: {{ include "topogang.httpPort" . }}}' $T/daemon.yaml &&
  grep -q 'define "topogang.httpPort" -}}{{ .Values.config.daemon.http_port' $T/_helpers.tpl ||
  fail "$T/daemon.yaml: the http containerPort is not config.daemon.http_port"
for f in deploy/topogangd.yaml $T/daemon.yaml $T/agent.yaml; do
  for u in $(sed -n 's/.*runAsUser:[[:space:]]*\([0-9]*\).*/\1/p' "$f"); do
    for s in "${!image_user[@]}"; do
      [ "$u" = "${image_user[$s]}" ] || fail "$f: runAsUser $u != the image's USER ${image_user[$s]} (stage $s)"
    done
  done
  grep -q 'runAsNonRoot: true' "$f" || fail "$f: no runAsNonRoot: true"
done
# The agent: NVML injection, node name, GPU nodes, token path = mount.
a=$T/agent.yaml
grep -q 'name: NVIDIA_VISIBLE_DEVICES, value: all' $a || fail "$a: NVIDIA_VISIBLE_DEVICES=all missing (the toolkit injects NVML only then)"
grep -q 'name: NVIDIA_DRIVER_CAPABILITIES, value: [a-z,]*utility' $a || fail "$a: NVIDIA_DRIVER_CAPABILITIES lacks utility (NVML)"
grep -q 'name: NODE_NAME' $a || fail "$a: no NODE_NAME (the agent needs --node or \$NODE_NAME)"
grep -q 'runtimeClassName: {{ .Values.agent.runtimeClassName }}' $a || fail "$a: runtimeClassName is not the agent.runtimeClassName value"
grep -q 'nvidia.com/gpu.*NoSchedule' "$vals" || fail "$vals: the agent does not tolerate nvidia.com/gpu:NoSchedule"
grep -q 'toYaml .Values.agent.tolerations' $a && grep -q 'toYaml .Values.agent.nodeSelector' $a ||
  fail "$a: tolerations/nodeSelector not from values"
tf=$(sed -n 's/.*--token-file=\([^ ]*\).*/\1/p' $a)
tm=$(sed -n 's/.*name: token, mountPath: \([^,]*\),.*/\1/p' $a)
[ -n "$tf" ] && [ "$(dirname "$tf")" = "$tm" ] || fail "$a: --token-file $tf is not under the token mountPath $tm"
grep -q 'include "topogang.checkAgent"' $a || fail "$a: does not refuse an agent without an identity (topogang.checkAgent)"

# --- 6. Schema, network policy, monitoring -----------------------------------------------------
# values.schema.json: parses, names every top-level key of values.yaml, and (where python3 has
# jsonschema and PyYAML) accepts the chart's own defaults.
schema=$CHART/values.schema.json
if [ ! -f "$schema" ]; then
  fail "$schema missing"
else
  # The top-level properties, from a JSON parser (python3, else jq), else from the file as
  # shipped (2-space indent: keys at 4 spaces inside the top-level "properties").
  if command -v python3 >/dev/null; then
    top_props=$(python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))
print("\n".join(s.get("properties", {}))); sys.exit(0 if s.get("additionalProperties") is False else 3)' "$schema" 2>"$TMP/schema.err")
    rc=$?
  elif command -v jq >/dev/null; then
    top_props=$(jq -r '.properties | keys[]' "$schema" 2>"$TMP/schema.err") &&
      { [ "$(jq '.additionalProperties' "$schema")" = false ] && rc=0 || rc=3; } || rc=1
  else
    note "neither python3 nor jq: $schema not parsed, top-level keys read with awk"
    top_props=$(awk '/^  "properties": \{/ { on = 1; next } on && /^  [}]/ { exit }
      on && /^    "[^"]*": / { s = $0; sub(/^    "/, "", s); sub(/".*/, "", s); print s }' "$schema")
    grep -q '^  "additionalProperties": false' "$schema" && rc=0 || rc=3
  fi
  if [ "$rc" = 3 ]; then
    fail "$schema: no additionalProperties false at the top level (a misspelt value would pass silently)"
  elif [ "$rc" != 0 ]; then
    fail "$schema is not JSON: $(cat "$TMP/schema.err")"
  fi
  for k in $(sed -n 's/^\([A-Za-z][A-Za-z0-9_]*\):.*/\1/p' "$vals"); do
    grep -qxF "$k" <<<"$top_props" || fail "$schema: values.yaml key $k is not in the schema's top-level properties"
  done
  for k in $top_props; do
    grep -q "^$k:" "$vals" || fail "$schema: property $k is not a top-level key of values.yaml"
  done
  if python3 -c 'import jsonschema, yaml' 2>/dev/null; then
    if out=$(python3 -c 'import json, sys, yaml, jsonschema
s = json.load(open(sys.argv[1])); jsonschema.Draft7Validator.check_schema(s)
jsonschema.validate(yaml.safe_load(open(sys.argv[2])), s)' "$schema" "$vals" 2>&1); then
      ok "$schema: draft-07, names every top-level value, accepts values.yaml"
    else
      fail "$schema rejects the chart's own values.yaml: $(tail -3 <<<"$out")"
    fi
  else
    note "python3 jsonschema/yaml not importable: values.yaml not validated against $schema"
  fi
fi
# NetworkPolicy: its peers are the labels the chart's pods carry, its ports their port names.
np=$T/networkpolicy.yaml
if [ ! -f "$np" ]; then
  fail "$np missing"
else
  grep -q 'matchLabels: {app: {{ .Values.scheduler.name }}}' "$np" &&
    grep -q 'labels: {app: {{ .Values.scheduler.name }}}' $T/scheduler.yaml ||
    fail "$np: the extender port's peer is not the labels of the chart's kube-scheduler pods"
  grep -q 'matchLabels: {app: topogang-agent}' "$np" && grep -q 'labels: {app: topogang-agent}' $T/agent.yaml ||
    fail "$np: the gRPC port's peer is not the labels of the agent pods"
  grep -q 'matchLabels: {app: topogangd}' "$np" || fail "$np: does not select the topogangd pods"
  # Port names after "port:", template tags dropped ({{ if tls }}health{{ else }}http{{ end }}).
  for p in $(grep -o '{protocol: TCP, port: .*' "$np" | sed 's/{{[^}]*}}/ /g; s/.*port://; s/}.*//'); do
    grep -q "{name: $p, containerPort:" $T/daemon.yaml || fail "$np: port $p is not a containerPort name of topogangd"
  done
  grep -q '{{- if .Values.networkPolicy.enabled }}' "$np" && grep -qE '^  enabled: false' <(yaml_block "$vals" '^networkPolicy:' | sed 's/^/  /') ||
    fail "$np: not behind networkPolicy.enabled, default false"
  ((fails)) || ok "$np: peers are the scheduler's and agents' pod labels, ports are topogangd's port names"
fi
# Monitoring: every metric the alert rules and the dashboard name is one topogangd exports, read
# off the /metrics of the real binary, started standalone on a shipped cluster file.
mon=$T/monitoring.yaml
dash=$CHART/dashboards/topogang.json
for f in "$mon" "$dash"; do [ -f "$f" ] || fail "$f missing"; done
[ -f "$dash" ] && { python3 -m json.tool "$dash" >/dev/null 2>&1 || jq . "$dash" >/dev/null 2>&1 || fail "$dash is not JSON"; }
grep -q '.Files.Get "dashboards/topogang.json"' "$mon" && grep -q 'grafana_dashboard: "1"' "$mon" ||
  fail "$mon: the dashboard ConfigMap does not ship dashboards/topogang.json with grafana_dashboard: \"1\""
grep -q 'port: {{ include "topogang.metricsPort" . }}' "$mon" ||
  fail "$mon: the metrics Service's port is not topogang.metricsPort (the health port under TLS)"
cluster=examples/clusters/mixed-h100-a100.yaml
metrics=""
if [ ! -f "$cluster" ]; then
  fail "$cluster missing (the standalone topogangd for /metrics)"
elif ! command -v curl >/dev/null; then
  note "no curl: metric names not checked against a running topogangd"
else
  for _ in 1 2 3 4 5; do  # a random port may be taken: retry
    hp=$((20000 + RANDOM % 20000)); gp=$((hp + 1))
    "$TOPOGANGD" --cluster "$cluster" --http-port "$hp" --bind-address 127.0.0.1 \
      --grpc-address "127.0.0.1:$gp" >"$TMP/metricsd.log" 2>&1 &
    mpid=$!
    for _ in $(seq 300); do  # up to 30 s: ctest runs this beside other tests on 2 cores
      # /metrics is served before the gRPC server (and its agent metrics) is up: scrape once
      # topogangd says it is serving everything.
      if grep -q '^topogangd: serving' "$TMP/metricsd.log"; then
        metrics=$(curl -sf "http://127.0.0.1:$hp/metrics" 2>/dev/null) && break
      fi
      kill -0 "$mpid" 2>/dev/null || break
      sleep 0.1
    done
    kill "$mpid" 2>/dev/null; wait "$mpid" 2>/dev/null
    [ -n "$metrics" ] && break
  done
  if [ -z "$metrics" ]; then
    fail "standalone topogangd on $cluster served no /metrics: $(tail -3 "$TMP/metricsd.log")"
  fi
fi
if [ -n "$metrics" ]; then
  grep -v '^#' <<<"$metrics" | sed -n 's/^\(topogang_[a-z0-9_]*\).*/\1/p' | sort -u >"$TMP/metric.names"
  for f in "$mon" "$dash"; do
    [ -f "$f" ] || continue
    used=$(grep -v '^[[:space:]]*#' "$f" | grep -oE 'topogang_[a-z0-9_]+' | sort -u)
    [ -n "$used" ] || fail "$f names no topogang metric"
    for m in $used; do
      grep -qxF "$m" "$TMP/metric.names" ||
        fail "$f: metric $m is not in topogangd's /metrics (it exports: $(tr '\n' ' ' <"$TMP/metric.names"))"
    done
    ok "$f: its $(wc -w <<<"$used") metric names are all in topogangd's /metrics"
  done
  grep -q 'kind: PrometheusRule' "$mon" && [ "$(grep -c -- '- alert:' "$mon")" -ge 4 ] ||
    fail "$mon: no PrometheusRule with alert rules"
fi

if ((fails)); then
  echo "check-deploy: $fails failure(s)"
  exit 1
fi
echo "check-deploy: all checks passed"
