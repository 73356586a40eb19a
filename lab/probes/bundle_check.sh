#!/usr/bin/env bash
# One GPU call for several branch builds carried as one archive (.carry/final.tar.xz: k3/, rel/,
# rope/, each a library + COMMIT + fallback/ [+ tests/]; libraries compress ~10x):
#   1. k3's kernel-level tests (test_attention, test_graphs, test_nonfinite, test_attention_args);
#   2. k3 against the release library, each head to head with FA3 FP8 (kernel_ab.py, 1k-8k);
#   3. rope/ (branch ropefast): test_quant_rope (GPU bytes == mirror) and rope_pairs.py.
# usage (repository root, GPU machine): bash lab/probes/bundle_check.sh   (carry .carry/final.tar.xz,
# .carry/COMMIT, .whl). Writes to $OUT: k3-tests.log, kernel_ab.json, rope-tests.log, rope-pairs.json.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
B=$(carry_unpack .carry/final.tar.xz bundle)
carry_fa3
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv
echo "== 1. k3 tests ($(cat $B/k3/COMMIT))"
carry_env "$B/k3"
carry_tests "$B/k3" "$OUT/k3-tests.log" test_attention:100 test_graphs:40 test_nonfinite:40 test_attention_args:40
echo "== 2. k3 vs release, each head to head with FA3 FP8"
timeout 80 python3 lab/probes/kernel_ab.py --lib "$B/rel/libfp8attn.so" \
  --variant-lib "$B/k3/libfp8attn.so" --variant-tags fp8attn_release,fp8attn_k3 --no-blocks \
  --variant-rows 0,1,2,3 --runs 100 --out "$OUT" 2>&1 | grep -v "kernel-only" | grep -v "^block size"
echo "== 3. ropefast ($(cat $B/rope/COMMIT))"
carry_env "$B/rope"
carry_tests "$B/rope" "$OUT/rope-tests.log" test_quant_rope:30
PYTHONPATH=$PYTHONPATH:$PWD/python timeout 75 python3 lab/probes/rope_pairs.py "$B/rope/libfp8attn.so" \
  "$OUT/rope-pairs.json" "$B/rope/COMMIT" 2>&1 | tail -24
