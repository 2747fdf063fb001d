#!/usr/bin/env bash
# Runs every test: installs missing packages, builds, then ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
cd build && ctest --output-on-failure -j"${JOBS:-$(nproc)}" --timeout 300
