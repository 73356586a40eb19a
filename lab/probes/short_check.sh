#!/usr/bin/env bash
# Lab (GPU machine, carry .carry/libfp8attn.so, COMMIT, fallback, tests/test_{attention,graphs,nonfinite,sanitize_targets} and .whl): one short call: the shipped kernels' sanitizers, three GPU test executables, the seed and
# 16 x 1k speed against FA3 FP8 (harness --quick). For a small change to the kernel when the device minutes left do not allow a full session.
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH="$PWD/.carry"
for dir in .carry/fallback/*/; do for lib in "$dir"*; do
  ldconfig -p | grep -q "$(basename "$lib")" || LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$PWD/$dir"; done; done
echo "commit $(cat .carry/COMMIT)"
scripts/gpu/sanitize.sh .carry/tests/test_sanitize_targets /tmp/san > /tmp/san.log 2>&1
cp /tmp/san/summary.tsv "$OUT/sanitize-summary.tsv"; cat /tmp/san/summary.tsv
for t in test_attention test_graphs test_nonfinite; do
  timeout 120 ".carry/tests/$t" > "/tmp/$t.log" 2>&1; echo "$t exit $?"
  grep -E "^\[  (PASSED|FAILED) \]|RELIABILITY" "/tmp/$t.log" | head -6
done
source lab/probes/carry.sh
carry_fa3
FP8ATTN_LIB="$PWD/.carry/libfp8attn.so" timeout 120 python3 bench/harness.py \
  --lib .carry/libfp8attn.so --out "$OUT" --commit-file .carry/COMMIT --quick --only speed \
  --command "lab/probes/short_check.sh (harness --quick --only speed)" 2>&1 | grep -E "head_to_head fp8attn |wrote|FAILED" | head -12
