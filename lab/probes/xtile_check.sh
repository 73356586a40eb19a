#!/usr/bin/env bash
# Issue 13 on the GPU machine, one call (~4 minutes): the tile boundary overlapped (xtile_stage.sh's patch:
# a tile's last P V in the turn of the next tile's first QK^T, its epilogue after the next tile's
# first softmax) against the release library: first the branch's kernel tests, then each library
# in its own process head to head with FA3 FP8 at 1k-8k, both masks, and kernel-only error on
# the outlier and Gaussian sets (kernel_ab.py).
# Here: bash lab/probes/xtile_stage.sh. Carry [".carry/xtile.tar.xz", ".whl"]. Writes
# $OUT/xtile-tests.log and $OUT/kernel_ab.json.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
B=$(carry_unpack .carry/xtile.tar.xz xtile)
carry_fa3
carry_header "$B/xtile" | tee "$OUT/xtile-tests.log"
for v in rel xtile; do echo "$v: $(cat "$B/$v/COMMIT")"; done
carry_env "$B/xtile"
carry_tests "$B/xtile" "$OUT/xtile-tests.log" test_attention:120 test_graphs:40 test_nonfinite:40 \
  test_attention_args:40 test_vt_fp16:60 test_quant_attention:90
timeout 330 python3 lab/probes/kernel_ab.py --lib "$B/rel/libfp8attn.so" \
  --variant-lib "$B/xtile/libfp8attn.so" --variant-tags fp8attn_release,fp8attn_xtile --no-blocks \
  --variant-rows 0,1,2,3 --runs 100 --out "$OUT" 2>&1 | grep -v "^block size"
