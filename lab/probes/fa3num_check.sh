#!/usr/bin/env bash
# Issue 14 item 2 on the GPU machine, one call (~4 minutes): FA3 FP8's numerics in fp8attn's three
# 192-key E4M3 kernels (lab/variants/fa3-numerics.patch: P offset 8, an exact running max, l from
# the FP32 p), against the release library with the lab knobs. Staged here by
#   bash lab/probes/lottery_stage.sh none && bash lab/probes/patch_stage.sh fa3num=fa3-numerics.patch
# Carry .carry/lot.tar.xz, .carry/lot-fa3num.tar.xz and .carry/fa3_site.tar.xz. kernel_ab.py: each
# library head to head with FA3 FP8 at 16 x 1k and 2 x 8k (both masks), and its kernel-only error
# beside FA3 FP8's on the outlier and Gaussian sets; then lottery_ab.py over every E4M3 kernel's
# rows of the sweep (--shape-set all), two rounds.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
carry_lot rel=rel "$OUT/fa3num.log"
carry_kernel_ab 0,3 rel:fp8attn fa3num:fp8attn_fa3num 2>&1 | tee -a "$OUT/fa3num.log"
timeout "${LOT_TIMEOUT:-300}" python3 lab/probes/lottery_ab.py --out "$OUT" --rounds 2 --shapes 11 \
  --shape-set all --config "rel=$B/rel/libfp8attn.so" --config "fa3num=$B/fa3num/libfp8attn.so" 2>&1 |
  tee -a "$OUT/fa3num.log"
