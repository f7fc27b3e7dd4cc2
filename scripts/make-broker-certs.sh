#!/usr/bin/env bash
# A local CA and a server certificate for mosquitto's TLS listener (docs/broker.md).
#   scripts/make-broker-certs.sh HOSTNAME [OUTDIR]      OUTDIR defaults to mosquitto/certs
# Writes ca.crt (give it to devices), ca.key (keep it safe; only needed to issue new
# certificates), server.crt and server.key (the broker's). Re-running keeps an existing CA,
# so devices that trust ca.crt keep working, and issues a new server certificate.
# The server certificate names HOSTNAME, localhost and 127.0.0.1 (subjectAltName).
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ -z "$1" ]; then
  echo "usage: $0 HOSTNAME [OUTDIR]" >&2
  exit 2
fi
host=$1
out=${2:-"$(dirname "$0")/../mosquitto/certs"}
if ! [[ $host =~ ^[A-Za-z0-9.-]+$ ]]; then
  echo "make-broker-certs: HOSTNAME must be a DNS name or an IPv4 address" >&2
  exit 2
fi

umask 077 # keys are created 0600; certificates are opened up below
mkdir -p "$out"
chmod 755 "$out" # certificates are public; the keys stay 0600
cd "$out"

if [ ! -f ca.key ] || [ ! -f ca.crt ]; then
  # RSA 2048: the widest support among device TLS stacks (mbedTLS, BearSSL, ...).
  openssl req -x509 -new -newkey rsa:2048 -nodes -sha256 -days 3650 \
    -keyout ca.key -out ca.crt -subj "/CN=healthgw local CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  echo "make-broker-certs: new CA in $out/ca.crt"
fi

san="DNS:localhost,IP:127.0.0.1"
if [[ $host =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  [ "$host" = 127.0.0.1 ] || san="IP:$host,$san"
elif [ "$host" != localhost ]; then
  san="DNS:$host,$san"
fi

ext=$(mktemp)
trap 'rm -f "$ext" server.csr' EXIT
printf '%s\n' \
  "basicConstraints=critical,CA:FALSE" \
  "keyUsage=critical,digitalSignature,keyEncipherment" \
  "extendedKeyUsage=serverAuth" \
  "subjectAltName=$san" >"$ext"
openssl req -new -newkey rsa:2048 -nodes -sha256 -keyout server.key -out server.csr \
  -subj "/CN=$host" 2>/dev/null
# 825 days: the longest validity some TLS clients accept for a server certificate.
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 \
  -days 825 -extfile "$ext" -out server.crt 2>/dev/null

chmod 600 ca.key server.key
chmod 644 ca.crt server.crt
echo "make-broker-certs: server certificate for $san in $out/server.crt (key server.key)"
