#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan/UBSan into build-fuzz/ and runs each for
# ${FUZZ_SECONDS:-60} seconds from the shipped examples as seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTOPOGANG_FUZZ=ON -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
fi
cmake --build build-fuzz --target parsers_fuzz wire_fuzz
corpus=build-fuzz/corpus/parsers
mkdir -p "$corpus"
i=0
for f in examples/clusters/*.yaml; do { printf '\x00'; cat "$f"; } > "$corpus/cluster$i"; i=$((i+1)); done
for f in examples/jobs/*.yaml; do { printf '\x01'; cat "$f"; } > "$corpus/jobs$i"; i=$((i+1)); done
for f in examples/traces/*.csv; do { printf '\x03'; head -c 4000 "$f"; } > "$corpus/trace$i"; i=$((i+1)); done
printf '\x02topology: {preset: aws}\nscheduler: {reservation_ttl_seconds: 5}\n' > "$corpus/config"
./build-fuzz/bin/parsers_fuzz -max_total_time="${FUZZ_SECONDS:-60}" -max_len=8192 "$corpus"

# The extender's wire parsers, seeded with the captured kube-scheduler bodies.
wcorpus=build-fuzz/corpus/wire
mkdir -p "$wcorpus"
i=0
wire=tests/testdata/kube-scheduler-wire
for f in "$wire"/*/filter-*.json "$wire"/*/prioritize-*.json; do
  [ -f "$f" ] && { printf '\x00\x05'; cat "$f"; } > "$wcorpus/args$i"; i=$((i+1))
done
for f in "$wire"/*/bind-*.json; do
  [ -f "$f" ] && { printf '\x01\x00'; cat "$f"; } > "$wcorpus/bind$i"; i=$((i+1))
done
printf '\x04\x00{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"2030-01-02T03:04:05Z"}}' > "$wcorpus/exec"
printf '\x02\x00{"Pod":{},"NodeNameToMetaVictims":{"n":{"Pods":[{"UID":"u"}],"NumPDBViolations":1}}}' > "$wcorpus/preempt"
./build-fuzz/bin/wire_fuzz -max_total_time="${FUZZ_SECONDS:-60}" -max_len=65536 "$wcorpus"
