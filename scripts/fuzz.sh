#!/usr/bin/env bash
# Builds the libFuzzer targets with clang + ASan/UBSan into ${FUZZ_BUILD:-build-fuzz}/ and runs
# each for ${FUZZ_SECONDS:-60} seconds from the shipped examples as seed corpus. FUZZ_TARGETS
# (default: all) picks some, e.g. FUZZ_TARGETS="review_fuzz config_fuzz".
set -euo pipefail
cd "$(dirname "$0")/.."
B=${FUZZ_BUILD:-build-fuzz}
# libFuzzer comes with clang (not needed by the build or the tests, so not in deps.sh).
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang: sudo apt-get install -y clang" >&2; exit 2; }
targets=${FUZZ_TARGETS:-parsers_fuzz wire_fuzz review_fuzz config_fuzz datagram_fuzz}
want() { [[ " $targets " == *" $1 "* ]]; }
if [ ! -f "$B/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTOPOGANG_FUZZ=ON -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
fi
# shellcheck disable=SC2086
cmake --build "$B" --target $targets
if want parsers_fuzz; then
corpus=$B/corpus/parsers
mkdir -p "$corpus"
i=0
for f in examples/clusters/*.yaml; do { printf '\x00'; cat "$f"; } > "$corpus/cluster$i"; i=$((i+1)); done
for f in examples/jobs/*.yaml; do { printf '\x01'; cat "$f"; } > "$corpus/jobs$i"; i=$((i+1)); done
for f in examples/traces/*.csv; do { printf '\x03'; head -c 4000 "$f"; } > "$corpus/trace$i"; i=$((i+1)); done
printf '\x02topology: {preset: aws}\nscheduler: {reservation_ttl_seconds: 5}\n' > "$corpus/config"
"$B/bin/parsers_fuzz" -max_total_time="${FUZZ_SECONDS:-60}" -max_len=8192 "$corpus"
fi

# The extender's wire parsers, seeded with the captured kube-scheduler bodies.
if want wire_fuzz; then
wcorpus=$B/corpus/wire
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
printf '\x06\x03{"version":1,"arrivals":{"team/llm":1764253800123,"b/x":1764253800124}}' > "$wcorpus/journal"
printf '\x06\x03{"version":1,"arrivals":{"team/llm":{"at":1764253800123,"could_start":1764253900000,"thin_since":1764254000000},"b/x":1764253800124}}' > "$wcorpus/journal-patience"
printf '\x06\x03{"version":1,"large_overload_seen":1764253830123,"arrivals":{"a/b":1764253800123}}' > "$wcorpus/journal-overload"
"$B/bin/wire_fuzz" -max_total_time="${FUZZ_SECONDS:-60}" -max_len=65536 "$wcorpus"
fi

# TokenReview / SubjectAccessReview answers (the documented shapes, a 403 Status) and JWTs.
if want review_fuzz; then
rcorpus=$B/corpus/review
mkdir -p "$rcorpus"
printf '\x00\x01{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"t"},"status":{"authenticated":true,"audiences":["topogang"],"user":{"username":"system:serviceaccount:topogang-system:topogang-agent","uid":"u","groups":["system:serviceaccounts","system:authenticated"],"extra":{"authentication.kubernetes.io/node-name":["lab-a1"],"authentication.kubernetes.io/pod-name":["p"]}}}}' > "$rcorpus/tokenreview"
printf '\x00\x00{"kind":"TokenReview","status":{"user":{},"error":"[invalid bearer token, service account token has expired]"}}' > "$rcorpus/refused"
printf '\x01\x01{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"u","resourceAttributes":{"verb":"drain","group":"topogang.io","resource":"nodes","name":"n"}},"status":{"allowed":true,"reason":"RBAC: allowed"}}' > "$rcorpus/sar"
printf '\x02\xa7{"kind":"Status","apiVersion":"v1","status":"Failure","message":"tokenreviews.authentication.k8s.io is forbidden","reason":"Forbidden","code":403}' > "$rcorpus/forbidden"
printf '\x03\x00eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOlsidG9wb2dhbmciXSwiZXhwIjoxNzAwMDAzNjAwfQ.c2ln' > "$rcorpus/jwt"
"$B/bin/review_fuzz" -max_total_time="${FUZZ_SECONDS:-60}" -max_len=16384 "$rcorpus"
fi

# The daemon's config sections, seeded with the shipped configs' daemon sections.
if want config_fuzz; then
ccorpus=$B/corpus/config
mkdir -p "$ccorpus"
sed -n '/^  config.yaml: |/,/^---/p' deploy/topogangd.yaml | sed '1d;$d' | sed 's/^    //' > "$ccorpus/deploy"
printf 'daemon:\n  http_port: 8443\n  tls: {cert_file: /t/tls.crt, key_file: /t/tls.key, client_ca_file: /t/ca.crt, reload_interval_ms: 5000}\n  health_port: 8889\n  grpc:\n    address: 0.0.0.0:9090\n    token_file: /s/t\n    tls: {cert: c, key: k, client_ca: ca}\n    token_review: {audiences: [topogang], agent_service_accounts: [a/b], cache_ttl_seconds: 10}\n    access_review: {enabled: true}\n' > "$ccorpus/full"
"$B/bin/config_fuzz" -max_total_time="${FUZZ_SECONDS:-60}" -max_len=8192 "$ccorpus"
fi

# Heartbeat datagrams as they come off the UDP socket: seeded with the shapes on the wire.
if want datagram_fuzz; then
dcorpus=$B/corpus/datagram
mkdir -p "$dcorpus"
printf 'TGH1\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01sixteen-byte-mac' > "$dcorpus/heartbeat"
printf 'TGA1\x00\x00\x00\x07' > "$dcorpus/ack"
printf 'TGR1\x00\x00\x00\x07' > "$dcorpus/reregister"
"$B/bin/datagram_fuzz" -max_total_time="${FUZZ_SECONDS:-60}" -max_len=128 "$dcorpus"
fi
