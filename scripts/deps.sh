#!/usr/bin/env bash
# Installs the Debian packages topogang builds with. Idempotent: skips apt when all are present.
set -euo pipefail
PKGS=(cmake ninja-build g++ pkg-config git
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
      libcpprest-dev libssl-dev libyaml-cpp-dev libabsl-dev prometheus-cpp-dev
      libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev zlib1g-dev
      libsimdjson-dev libboost-dev
      python3 python3-yaml)  # tests/deploy/helm_render.py (renders the Helm chart in ctest)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
