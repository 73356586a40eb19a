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
carry_begin .carry/xtile.tar.xz xtile "$OUT/xtile-tests.log" xtile rel
carry_tests "$B/xtile" "$OUT/xtile-tests.log" test_attention:120 test_graphs:40 test_nonfinite:40 \
  test_attention_args:40 test_vt_fp16:60 test_quant_attention:90
carry_kernel_ab 0,1,2,3 rel:fp8attn_release xtile:fp8attn_xtile
