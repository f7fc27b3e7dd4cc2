#!/usr/bin/env bash
# Regenerate the hash-pinned lock files in requirements/ (needs network to PyPI).
#
#   scripts/lock.sh              # keep current pins, add/remove what pyproject.toml changed
#   scripts/lock.sh --upgrade    # newest versions within pyproject.toml's bounds
#
# dev.lock    .[dev,llm]: setup.sh and CI
# runtime.lock  .  (no extras): the Dockerfile
# build.lock  setuptools + scikit-build-core: installed first, so builds use no unpinned deps
# runtime.lock and build.lock are constrained to dev.lock's versions, so the three agree.
# Target: CPython 3.11 on linux x86_64. Hashes cover every file of each pinned release
# (all platforms' wheels and the sdist), so the same lock installs on a Pi (aarch64).
set -euo pipefail
cd "$(dirname "$0")/.."

UV=${UV:-$(command -v uv || true)}
if [ -z "$UV" ]; then
  tool=${TMPDIR:-/tmp}/healthgw-locktool
  [ -x "$tool/bin/uv" ] || { python3 -m venv "$tool" && "$tool/bin/pip" install -q uv; }
  UV=$tool/bin/uv
fi
common=(--quiet --generate-hashes --python-version 3.11 --python-platform x86_64-unknown-linux-gnu
  --index-url https://pypi.org/simple --custom-compile-command scripts/lock.sh "$@")

"$UV" pip compile pyproject.toml --extra dev --extra llm "${common[@]}" -o requirements/dev.lock
pins=$(mktemp)
trap 'rm -f "$pins"' EXIT
grep -E '^[A-Za-z0-9._-]+(\[[^]]*\])?==' requirements/dev.lock | sed 's/ *\\$//' >"$pins"
# No "via" annotations here: they would name the temporary pins file.
"$UV" pip compile pyproject.toml -c "$pins" --no-annotate "${common[@]}" -o requirements/runtime.lock
"$UV" pip compile requirements/build.in -c "$pins" --no-annotate "${common[@]}" \
  -o requirements/build.lock
echo "lock: wrote requirements/{dev,runtime,build}.lock"
