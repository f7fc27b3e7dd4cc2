#!/usr/bin/env bash
# Pin every base image in the Dockerfile and docker-compose.yml to its current multi-arch
# digest (image:tag@sha256:...), on a machine with Docker and registry access:
#
#   scripts/pin-images.sh           # pin images that have no digest yet
#   scripts/pin-images.sh --update  # re-resolve every tag (new upstream builds: security fixes)
#   scripts/pin-images.sh --check   # only report pinned digests that their tag no longer names
#
# It asks the registry for the tag's index digest (`docker buildx imagetools inspect`), so
# the pin covers every platform (a Pi 5 pulls arm64 from the same digest). Afterwards remove
# the pinned images from scripts/unpinned-images.txt and run tests/project/test_supply_chain.py.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-pin}
command -v docker >/dev/null || { echo "pin-images: needs docker (with buildx)" >&2; exit 2; }

resolve() { docker buildx imagetools inspect "$1" --format '{{json .Manifest}}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["digest"])'; }

refs() {  # "FROM ref" / "image: ref" in $1
  grep -oE '^(FROM|[[:space:]]+image:)[[:space:]]+[^[:space:]]+' "$1" | awk '{print $NF}' | sort -u
}

status=0
for file in Dockerfile docker-compose.yml; do
  while read -r ref; do
    [ "$ref" = "healthgw:local" ] && continue  # built here, never pulled
    tag=${ref%@sha256:*}
    if [ "$ref" != "$tag" ] && [ "$mode" = pin ]; then continue; fi
    digest=$(resolve "$tag")
    if [ "$mode" = --check ]; then
      [ "$ref" = "$tag@$digest" ] || { echo "$file: $ref: $tag is now $digest"; status=1; }
      continue
    fi
    [ "$ref" = "$tag@$digest" ] && continue
    echo "$file: $tag -> $tag@$digest"
    python3 - "$file" "$ref" "$tag@$digest" <<'PY'
import re, sys
path, old, new = sys.argv[1:]
text = open(path).read()
pattern = r"(?m)(^FROM\s+|^\s+image:\s+)" + re.escape(old) + r"(?=\s|$)"
open(path, "w").write(re.sub(pattern, lambda m: m.group(1) + new, text))
PY
  done < <(refs "$file")
done
exit $status
