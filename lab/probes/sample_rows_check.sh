#!/usr/bin/env bash
# On the GPU machine, one call (~4 minutes): the one-pass sample at 512 rows (2faffcc) against 128
# (the thirteenth session; lab/perf-log.md, "the one-pass centre's residual reaches the P V
# accumulator"). Carry .carry/bundle.tar.xz (scripts/stage_gpu.sh BUNDLE=1 NO_CAPTURES=1, 512 rows),
# .carry/lot.tar.xz (lottery_stage.sh none at 805d1af: rel, 128 rows) and .carry/fa3_site.tar.xz.
#   1. the one-pass GPU tests (GPU bytes against the CPU mirror, whose sample follows the header);
#   2. lab/probes/one_pass_seeds_gpu.py, 10 seeds, and one_pass_decompose_gpu.py, 4 seeds (512);
#   3. lab/probes/one_pass_e2e.py on each library: one-pass vs exact mean head to head, each vs FA3
#      BF16 (the sample kernel's cost shows as the change of one-pass / mean between the two).
# Files in $OUT (6): rows.log, rows-tests.log, one-pass-seeds-gpu-rows512.json,
# one-pass-decompose-gpu-rows512.json, one-pass-e2e-rows512.json, one-pass-e2e-rows128.json.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
mkdir -p .carry && tar -xJf .carry/bundle.tar.xz -C .carry
B=/tmp/lot; rm -rf "$B"; mkdir -p "$B"; tar -xJf .carry/lot.tar.xz -C "$B"
source lab/probes/carry.sh
carry_env .carry
{
carry_header .carry
carry_tests .carry "$OUT/rows-tests.log" test_quant:120 test_quant_attention:60 test_quant_rope:60 \
  test_quant_api:60
carry_fa3
timeout 150 python3 lab/probes/one_pass_seeds_gpu.py .carry/libfp8attn.so \
  "$OUT/one-pass-seeds-gpu-rows512.json" 10
mkdir -p /tmp/dec && timeout 90 python3 lab/probes/one_pass_decompose_gpu.py .carry/libfp8attn.so /tmp/dec 4 \
  | tail -18 && cp /tmp/dec/one-pass-decompose-gpu.json "$OUT/one-pass-decompose-gpu-rows512.json"
timeout 100 python3 lab/probes/one_pass_e2e.py .carry/libfp8attn.so "$OUT/one-pass-e2e-rows512.json" \
  .carry/COMMIT
timeout 100 python3 lab/probes/one_pass_e2e.py "$B/rel/libfp8attn.so" "$OUT/one-pass-e2e-rows128.json" \
  "$B/rel/COMMIT"
} 2>&1 | tee "$OUT/rows.log"
