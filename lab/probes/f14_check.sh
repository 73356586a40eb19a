#!/usr/bin/env bash
# Issue 14 item 2 on the GPU machine, one call (~5 minutes): the fast mode's candidate numerics on
# the release (tilefix) kernel, each library in its own process head to head with FA3 FP8 at
# 1k-8k, and its kernel-only error on FA3's outlier test and Gaussian data beside FA3 FP8's
# (kernel_ab.py --variant-lib):
#   rel       main as it is (P offset 5, slack 3, l the tensor core's sum of the rounded P)
#   o8s0      branch f14t: offset 8 with an exact running max (branch fast14's constants)
#   o8s0-l32  the same with l from the FP32 p (lab/study-fastmode/variant-l-fp32.patch): FA3's
#             numerics, which the CPU study says closes the error gap (results/fastmode-study-2.md)
#   o8s0-l32-224  the same in 224-key blocks (variant-l-fp32-block224.patch): FA3 FP8's tile too
#   l32-224   main's offset and slack, l from the FP32 p, 224-key blocks: the tile's own effect
# Here: bash lab/probes/f14_stage.sh. Carry [".carry/f14.tar.xz", ".whl"]. Writes $OUT/kernel_ab.json and $OUT/header.log.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
carry_begin .carry/f14.tar.xz f14 "$OUT/header.log" rel l32-224 o8s0 o8s0-l32 o8s0-l32-224
KAB_TIMEOUT=560 carry_kernel_ab 0,1,2,3 rel:fp8attn_release l32-224:fp8attn_l32_224 o8s0:fp8attn_o8s0 \
  o8s0-l32:fp8attn_o8s0_l32 o8s0-l32-224:fp8attn_o8s0_l32_224
