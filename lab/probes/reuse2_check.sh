#!/usr/bin/env bash
# Issue 13 on the GPU machine, one call (~2 minutes; here: bash lab/probes/reuse2_stage.sh): does restoring the exp FFMAs' operand reuse
# recover xtile v2's loss? Three libraries (.carry/reuse2.tar.xz, from helper branch sched's
# lab/sass/reuse_stage.sh: rel = the release, v2 = lab/variants/xtile-v2.patch as measured,
# v2_set = v2 with the release's reuse pattern on its exp FFMAs, lab/sass/reuse_patch.py), each
# in its own process head to head with FA3 FP8 at 4k and 8k, both masks, and kernel-only error
# (must equal between v2 and v2_set). Carry [".carry/reuse2.tar.xz", ".whl"].
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
B=$(carry_unpack .carry/reuse2.tar.xz reuse2)
carry_fa3
carry_header "$B/rel" | tee "$OUT/header.log"
for v in rel v2 v2_set; do echo "$v: $(cat "$B/$v/COMMIT")" | tee -a "$OUT/header.log"; done
carry_env "$B/rel"
timeout 400 python3 lab/probes/kernel_ab.py --lib "$B/rel/libfp8attn.so" \
  --variant-lib "$B/v2/libfp8attn.so" --variant-lib "$B/v2_set/libfp8attn.so" \
  --variant-tags fp8attn_release,fp8attn_xtile_v2,fp8attn_xtile_v2_set --no-blocks \
  --variant-rows 2,3 --runs 100 --out "$OUT" 2>&1 | grep -v "^block size"
