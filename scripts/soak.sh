#!/usr/bin/env bash
# The fault suite and the kill -9 restart tests, N times in a row (issue 26: a flaky safety
# test is a defect; this is how its rate is measured). Each run's log and the FAULTS-SUMMARY
# lines (SOS latencies, drains, losses) go to OUT_DIR; summary.txt has one line per run.
#
#   scripts/soak.sh [N=10] [OUT_DIR=/tmp/healthgw-soak]
#
# Run it on an otherwise idle machine: the bounds are the production ones (SOS <= 1 s).
set -u
N=${1:-10}
OUT=${2:-/tmp/healthgw-soak}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
: > "$OUT/summary.txt"
TESTS=(
  tests/faults
  tests/agents/assistant/test_conversation_restart_e2e.py
  tests/e2e/test_escalation.py
)
fails=0
for i in $(seq 1 "$N"); do
  start=$(date +%s)
  PYTHONPATH=$PWD .venv/bin/pytest -q -p no:cacheprovider -s -m "" "${TESTS[@]}" \
    > "$OUT/run-$i.log" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || fails=$((fails + 1))
  echo "run $i rc=$rc $(( $(date +%s) - start ))s $(tail -1 "$OUT/run-$i.log")" >> "$OUT/summary.txt"
  grep -h "FAULTS-SUMMARY" "$OUT/run-$i.log" | sed "s/^/  run $i: /" >> "$OUT/summary.txt"
done
echo "$N runs, $fails failed" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
[ "$fails" -eq 0 ]
