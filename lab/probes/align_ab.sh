#!/usr/bin/env bash
# Does the long-tile kernel's speed follow its code's alignment? Four builds of branch `align`
# (main at d2a2b78: the release kernel with 0, 2, 4, 6 NANOSLEEP instructions at its entry),
# whose steady-state loop is the same instruction sequence (lab/sass/inner_loop.py: only branch
# targets differ) starting at 48, 96, 0 and 32 mod 128 bytes; each head to head with FA3 FP8 at
# 4k and 8k (kernel_ab.py, each library in its own process). Carry [".carry/align.tar.xz",
# ".carry/COMMIT", ".carry/fallback", ".whl"]; ~1 minute. Writes $OUT/kernel_ab.json.
# Built here by: for N in 0 2 4 6: define FP8ATTN_LAB_ALIGN_NOPS N atop
# src/attn/instantiations/e4m3_block192.cu on branch align, build, copy (tar -cJf ... n0 n2 n4 n6).
set -u
cd "$(dirname "$0")/../.."
mkdir -p /tmp/align && tar -xJf .carry/align.tar.xz -C /tmp/align
bash lab/probes/with_fa3.sh python3 lab/probes/kernel_ab.py --lib /tmp/align/n0/libfp8attn.so \
  --variant-lib /tmp/align/n2/libfp8attn.so --variant-lib /tmp/align/n4/libfp8attn.so \
  --variant-lib /tmp/align/n6/libfp8attn.so --variant-tags loop_at_48,loop_at_96,loop_at_0,loop_at_32 \
  --no-blocks --variant-rows 2,3 --runs 100 --out "${OUT:-/tmp/out}" 2>&1 | grep -v "kernel-only"
