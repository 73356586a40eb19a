#!/usr/bin/env bash
# Runs ON THE GPU MACHINE (carry [".carry"], built here by scripts/stage_gpu.sh): the reliability
# tests, the sanitizers, and the `reliability` block for the results file.
#   1. test_validation, test_nonfinite, test_graphs, test_fuzz (1000 shapes)   ~2.5 min
#   2. scripts/gpu/sanitize.sh (4 tools x 5 targets, budget 230 s)            <= 4 min
#   3. scripts/gpu/reliability.py -> $OUT/reliability.json (+ logs in $OUT/reliability-logs.tar.gz)
# PART=tests or PART=sanitize runs only steps 1 or 2 (two shorter GPU calls); step 3 then runs on
# what is there, and scripts/gpu/reliability.py can be rerun here on both calls' logs:
#   python3 scripts/gpu/reliability.py --logs A/test_*.log --sanitize B/sanitize/summary.tsv --out F
# Files under $OUT: reliability.json and reliability-logs.tar.gz (gtest logs, sanitizer logs).
# Exit status 0 only when every test passed and the block says ok.
set -u -o pipefail
PART=${PART:-all}
cd "$(dirname "$0")/../.."
CARRY=${CARRY:-.carry}
OUT=${OUT:-results/reliability-out}
LOGS="$OUT/reliability-logs"
mkdir -p "$LOGS"
export LD_LIBRARY_PATH="$PWD/$CARRY${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Carried stand-ins (scripts/stage_gpu.sh) for runtime libraries this machine may lack.
for dir in "$CARRY"/fallback/*/; do
  for lib in "$dir"*; do
    ldconfig -p 2>/dev/null | grep -q "$(basename "$lib")" || LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$PWD/$dir"
  done
done
status=0
[[ $PART == sanitize ]] || for t in test_validation test_nonfinite test_graphs test_fuzz; do
  echo "=== $t"
  timeout -k 10 300 "$CARRY/tests/$t" > "$LOGS/$t.log" 2>&1 || status=1
  grep -E "^\[  (PASSED|FAILED) \]|RELIABILITY|FUZZ FAIL|\[ info \]" "$LOGS/$t.log" | head -20
done
if [[ $PART != tests ]]; then
  echo "=== sanitizers"
  scripts/gpu/sanitize.sh "$CARRY/tests/test_sanitize_targets" "$LOGS/sanitize" || status=1
fi
echo "=== reliability block"
python3 scripts/gpu/reliability.py --logs "$LOGS"/test_*.log /dev/null --sanitize "$LOGS/sanitize/summary.tsv" \
  --commit "$(cat "$CARRY/COMMIT" 2>/dev/null)" --out "$OUT/reliability.json" || status=1
tar -czf "$OUT/reliability-logs.tar.gz" -C "$OUT" reliability-logs && rm -rf "$LOGS"
exit $status
