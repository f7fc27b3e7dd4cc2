#!/usr/bin/env bash
# `make audit`: known vulnerabilities in every locked dependency (requirements/*.lock), with
# pip-audit. Its data comes from PyPI's per-release JSON API (default) or from OSV
# (AUDIT_SERVICE=osv); without either this fails with a message instead of passing or
# hanging. --strict: a package that could not be checked fails the audit too.
set -euo pipefail
cd "$(dirname "$0")/.."

service=${AUDIT_SERVICE:-pypi}
case "$service" in
  pypi) probe=${AUDIT_PROBE_URL:-https://pypi.org/pypi/pip/$(sed -n 's/^pip==\([^ ]*\).*/\1/p' requirements/dev.lock)/json} ;;
  osv) probe=${AUDIT_PROBE_URL:-https://api.osv.dev/v1/query} ;;
  *) echo "audit: AUDIT_SERVICE must be pypi or osv" >&2; exit 2 ;;
esac
# A quick probe with a short timeout, so an offline machine gets a clear answer at once.
if ! .venv/bin/python - "$probe" "$service" <<'PY'
import sys, urllib.request
url, service = sys.argv[1], sys.argv[2]
data = b'{"package": {"name": "pip", "ecosystem": "PyPI"}}' if service == "osv" else None
try:
    urllib.request.urlopen(url, data=data, timeout=15).close()
except Exception as exc:
    sys.exit(f"audit: cannot reach {url} ({exc})")
PY
then
  echo "audit: pip-audit's vulnerability data ($service) is out of reach from here; run" \
    "\`make audit\` on a machine with internet access (or AUDIT_SERVICE=osv)" >&2
  exit 2
fi
exec timeout "${AUDIT_TIMEOUT:-900}" .venv/bin/pip-audit --strict --disable-pip --require-hashes \
  -r requirements/dev.lock -r requirements/build.lock -r requirements/runtime.lock \
  --vulnerability-service "$service" --timeout 30 --progress-spinner off
