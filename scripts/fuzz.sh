#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan/UBSan into build-fuzz/ and runs each for
# ${FUZZ_SECONDS:-60} seconds from the shipped examples as seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTOPOGANG_FUZZ=ON -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
fi
cmake --build build-fuzz --target parsers_fuzz
corpus=build-fuzz/corpus/parsers
mkdir -p "$corpus"
i=0
for f in examples/clusters/*.yaml; do { printf '\x00'; cat "$f"; } > "$corpus/cluster$i"; i=$((i+1)); done
for f in examples/jobs/*.yaml; do { printf '\x01'; cat "$f"; } > "$corpus/jobs$i"; i=$((i+1)); done
printf '\x02topology: {preset: aws}\nscheduler: {reservation_ttl_seconds: 5}\n' > "$corpus/config"
./build-fuzz/bin/parsers_fuzz -max_total_time="${FUZZ_SECONDS:-60}" -max_len=8192 "$corpus"
