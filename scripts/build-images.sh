#!/usr/bin/env bash
# Builds the two topogang images from docker/Dockerfile with whichever container engine works
# here: docker, podman or buildah (in that order, or --engine). An engine counts only if it can
# actually build: `docker info` / `podman info` / `buildah info` must succeed (a docker client
# without a reachable daemon does not count).
#
#   scripts/build-images.sh [--registry REG] [--tag TAG] [--engine docker|podman|buildah]
#                           [--push] [--print-images]
#
#   REG  image name prefix (default: topogang), e.g. ghcr.io/acme or registry.local:5000/topogang
#   TAG  default: appVersion of helm/topogang/Chart.yaml, which is also the chart's default
#        image tag, so `helm install` with no image values pulls what this script built
#
# Images: REG/topogangd:TAG (target topogangd) and REG/topogang-agent:TAG (target agent).
# --print-images prints those two names and exits without an engine (tests/deploy uses it to
# check that deploy/ and the chart reference exactly these images).
# Extra arguments for the engine's build command can be given in BUILD_ARGS, e.g.
# BUILD_ARGS="--build-arg BUILD_TYPE=Release".
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "build-images: $*" >&2; exit 1; }

registry=topogang
tag=""
engine=""
push=0
print_only=0
while (($#)); do
  case "$1" in
    --registry) registry=${2:?--registry needs a value}; shift 2 ;;
    --registry=*) registry=${1#*=}; shift ;;
    --tag) tag=${2:?--tag needs a value}; shift 2 ;;
    --tag=*) tag=${1#*=}; shift ;;
    --engine) engine=${2:?--engine needs a value}; shift 2 ;;
    --engine=*) engine=${1#*=}; shift ;;
    --push) push=1; shift ;;
    --print-images) print_only=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
registry=${registry%/}
if [ -z "$tag" ]; then
  tag=$(sed -n 's/^appVersion:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}.*$/\1/p' helm/topogang/Chart.yaml)
  [ -n "$tag" ] || die "no appVersion in helm/topogang/Chart.yaml; pass --tag"
fi

# target:image-name pairs. The names must match deploy/*.yaml and helm/topogang/values.yaml.
images=("topogangd:$registry/topogangd:$tag" "agent:$registry/topogang-agent:$tag")

if ((print_only)); then
  for i in "${images[@]}"; do echo "${i#*:}"; done
  exit 0
fi

works() {  # works ENGINE: the engine exists and can talk to its daemon / storage
  command -v "$1" >/dev/null 2>&1 || return 1
  "$1" info >/dev/null 2>&1
}

if [ -n "$engine" ]; then
  case "$engine" in docker|podman|buildah) ;; *) die "--engine must be docker, podman or buildah" ;; esac
  command -v "$engine" >/dev/null 2>&1 || die "$engine is not installed"
  if ! works "$engine"; then
    "$engine" info >&2 || true
    die "$engine is installed but '$engine info' fails (is the daemon running / do you have access?)"
  fi
else
  tried=()
  for e in docker podman buildah; do
    if works "$e"; then engine=$e; break; fi
    if command -v "$e" >/dev/null 2>&1; then
      tried+=("$e (installed, but '$e info' fails)")
    else
      tried+=("$e (not installed)")
    fi
  done
  if [ -z "$engine" ]; then
    printf 'build-images: no working container engine:\n' >&2
    printf '  %s\n' "${tried[@]}" >&2
    die "install docker, podman or buildah, or start the docker daemon (Dockerfile: docker/Dockerfile)"
  fi
fi
echo "build-images: using $engine"

for i in "${images[@]}"; do
  target=${i%%:*}
  name=${i#*:}
  echo "build-images: $name (target $target)"
  # shellcheck disable=SC2086  # BUILD_ARGS is split on purpose
  case "$engine" in
    docker|podman) "$engine" build -f docker/Dockerfile --target "$target" -t "$name" ${BUILD_ARGS:-} . ;;
    buildah) buildah bud -f docker/Dockerfile --target "$target" -t "$name" ${BUILD_ARGS:-} . ;;
  esac
done
if ((push)); then
  for i in "${images[@]}"; do
    echo "build-images: pushing ${i#*:}"
    "$engine" push "${i#*:}"
  done
fi
echo "build-images: built $(for i in "${images[@]}"; do printf '%s ' "${i#*:}"; done)"
