#!/usr/bin/env bash
# Issue 17 item 2 (rope + quantize) on the GPU machine, one call of < 3 minutes (limits add up to
# 170 s):
#   1. test_quant_rope: the rope entry's GPU bytes == the CPU mirror (8 shapes / option sets, a
#      NaN table row), fp8attn_rope_bf16 == the mirror rounded to BF16, the refusals;
#      test_quant: the no-rope pre-pass unchanged (its kernels gained the rope template flag);
#   2. lab/probes/rope_pairs.py: fp8attn_rope_quantize_pair vs fa3_bf16_rope_pair (and
#      fp8attn_end_to_end vs fa3_bf16, rope pair vs end to end) at b2 s8192 h32/32, h32/8 and
#      b16 s1024 h32/32, both masks; then the fused vs non-fused end-to-end error on the synthetic
#      sets with a random table (ratio <= 1.10 passes).
#
# usage (repository root): bash lab/probes/rope.sh [CARRY]
#   CARRY (default .carry/rope): written by lab/probes/rope_stage.sh here. FA3's wheel from .whl/
#   when there (without it the FA3 pairs are left out).
# Writes to $OUT (3 files): rope.log, rope-tests.log, rope-pairs.json.
set -u
cd "$(dirname "$0")/../.."
CARRY=${1:-.carry/rope}
CARRY=$(cd "$CARRY" && pwd)
source lab/probes/carry.sh
carry_env "$CARRY"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{
start=$SECONDS
carry_header "$CARRY"
carry_tests "$CARRY" "$OUT/rope-tests.log" test_quant_rope:40 test_quant:50
carry_fa3
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD/python"
t0=$SECONDS
timeout 80 python3 lab/probes/rope_pairs.py "$CARRY/libfp8attn.so" "$OUT/rope-pairs.json" \
  "$CARRY/COMMIT" 2>&1
echo "rope_pairs exit $? ($((SECONDS - t0)) s); total $((SECONDS - start)) s"
} 2>&1 | tee "$OUT/rope.log"
