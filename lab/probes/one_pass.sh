#!/usr/bin/env bash
# Issue 17 on the GPU machine, one call (carry .carry with libfp8attn.so, COMMIT, fallback/ and
# tests/test_quant, test_quant_attention from scripts/stage_gpu.sh; and .whl for FA3):
#   1. the GPU bytes against the CPU mirror, one-pass option sets and the regroup case included
#      (test_quant), and end to end == split path (test_quant_attention);
#   2. the end-to-end call, mean and sample, head to head with FA3 BF16, and the end-to-end
#      error of both on synthetic sets (lab/probes/one_pass_e2e.py);
#   3. the pre-pass alone, centre=mean vs centre=sample (lab/probes/time_prepass.py).
# The time limits add up to under 10 minutes; each JSON is written as it grows.
# Writes to $OUT: one-pass-tests.log, time-prepass.json, one-pass-e2e.json, one-pass.log.
set -u
cd "$(dirname "$0")/../.."
export LD_LIBRARY_PATH="$PWD/.carry"
for dir in .carry/fallback/*/; do for lib in "$dir"*; do
  ldconfig -p | grep -q "$(basename "$lib")" || LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$PWD/$dir"; done; done
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{
echo "commit $(cat .carry/COMMIT) $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv
for t in test_quant test_quant_attention; do
  limit=180; [[ $t == test_quant_attention ]] && limit=90
  timeout $limit ".carry/tests/$t" > "/tmp/$t.log" 2>&1; echo "$t exit $?"
  grep -E "^\[  (PASSED|FAILED) \]|FAILED|seed" "/tmp/$t.log" | head -12
  cat "/tmp/$t.log" >> "$OUT/one-pass-tests.log"
done
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site
timeout 180 python3 lab/probes/one_pass_e2e.py .carry/libfp8attn.so "$OUT/one-pass-e2e.json" 2>&1
timeout 120 python3 lab/probes/time_prepass.py .carry/libfp8attn.so "$OUT/time-prepass.json" 2>&1
} 2>&1 | tee "$OUT/one-pass.log"
