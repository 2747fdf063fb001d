#!/bin/sh
# Makes a throwaway PKI for the gRPC TLS tests in directory $1 (run by the tests themselves):
#   ca.crt/key          test CA
#   server.crt/key      CN=localhost, SAN DNS:localhost, IP:127.0.0.1
#   lab-a1.crt/key      agent certificate for node lab-a1 (CN and SAN DNS)
#   rogue-ca.crt/key, rogue-lab-a1.crt/key   same name, signed by another CA
set -eu
d=$1
cd "$d"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1.key" 2>/dev/null; }
ca() {
  key "$1"
  openssl req -x509 -new -key "$1.key" -out "$1.crt" -days 2 -subj "/CN=$1" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
leaf() {  # name ca cn san
  key "$1"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$3"
  printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\n' "$4" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -out "$1.crt" \
    -days 2 -extfile "$1.ext" 2>/dev/null
}
ca ca
ca rogue-ca
leaf server ca localhost "DNS:localhost,IP:127.0.0.1"
leaf lab-a1 ca lab-a1 "DNS:lab-a1"
leaf rogue-lab-a1 rogue-ca lab-a1 "DNS:lab-a1"
