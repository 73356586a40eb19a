#!/usr/bin/env bash
# Issue 17 on the GPU machine, one call of ~1-2 minutes (limits add up to 165 s):
#   1. test_quant: the GPU bytes against the CPU mirror for every option set, the one-pass
#      (centre=sample) sets and the regroup case included, each with E4M3 and FP16 V^T;
#      test_quant_attention: end to end == split path bit for bit and the references, one-pass
#      cases included;
#   2. lab/probes/one_pass_e2e.py: the end-to-end call head to head, one-pass vs mean and each vs
#      FA3 BF16, at b2 s8192 h32/32 and b16 s1024 h32/32, both masks, 100 runs each; then the
#      end-to-end error of both centres on two small synthetic sets (E4M3 and FP16 V^T modes).
# Left out (earlier versions): the h_kv 8 shapes, the pre-pass-alone timing (time_prepass.py).
#
# usage (repository root): bash lab/probes/one_pass.sh [CARRY]
#   CARRY (default .carry/one-pass): libfp8attn.so, COMMIT, tests/test_quant,
#   tests/test_quant_attention, fallback/ (lab/probes/one_pass_stage.sh writes it). FA3's wheel
#   from .whl/ when there (without it the FA3 pairs are left out).
# Writes to $OUT (3 files): one-pass.log, one-pass-tests.log, one-pass-e2e.json.
set -u
cd "$(dirname "$0")/../.."
CARRY=${1:-.carry/one-pass}
CARRY=$(cd "$CARRY" && pwd)
source lab/probes/carry.sh
carry_env "$CARRY"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{
start=$SECONDS
carry_header "$CARRY"
carry_tests "$CARRY" "$OUT/one-pass-tests.log" test_quant:60 test_quant_attention:30
carry_fa3
t0=$SECONDS
timeout 75 python3 lab/probes/one_pass_e2e.py "$CARRY/libfp8attn.so" "$OUT/one-pass-e2e.json" \
  "$CARRY/COMMIT" 2>&1
echo "one_pass_e2e exit $? ($((SECONDS - t0)) s); total $((SECONDS - start)) s"
} 2>&1 | tee "$OUT/one-pass.log"
