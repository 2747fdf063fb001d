#!/usr/bin/env bash
# Quick start: install packages, build, and dry-run the example jobs on the example cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
./build/bin/topogang dry-run --cluster examples/clusters/lab-64.yaml --jobs examples/jobs/lab-jobs.yaml
