#!/usr/bin/env bash
# There (GPU): does operand reuse / register-bank placement cost the long-tile kernel speed on the
# H200? Five libraries from lab/sass/reuse_stage.sh (.carry/reuse5.tar.xz), identical but for the
# reuse flags (and bit 45) of the 96 exp-argument FFMAs of the steady-state loop: rel (release),
# rel_clear, rel_clear_swap, v2 (xtile v2 as measured), v2_set; each head to head with FA3 FP8 at
# 4k and 8k, both masks (kernel_ab.py, each library in its own process; its kernel-only error printed: the patched ones must match their originals).
# Carry [".carry/reuse5.tar.xz", ".carry/COMMIT", ".carry/fallback", ".whl"]; ~2 minutes. Writes
# $OUT/kernel_ab.json. Static predictions: lab/results/sass/schedule-metrics.txt (rows rel_clear,
# rel_clear_swap, v2_set).
set -u
cd "$(dirname "$0")/../.."
rm -rf /tmp/reuse && mkdir -p /tmp/reuse && tar -xJf .carry/reuse5.tar.xz -C /tmp/reuse
L=/tmp/reuse
bash lab/probes/with_fa3.sh python3 lab/probes/kernel_ab.py --lib $L/rel/libfp8attn.so \
  --variant-lib $L/rel_clear/libfp8attn.so --variant-lib $L/rel_clear_swap/libfp8attn.so \
  --variant-lib $L/v2/libfp8attn.so --variant-lib $L/v2_set/libfp8attn.so \
  --variant-tags rel,rel_clear,rel_clear_swap,v2,v2_set \
  --no-blocks --variant-rows 2,3 --runs 100 --out "${OUT:-/tmp/out}" 2>&1
