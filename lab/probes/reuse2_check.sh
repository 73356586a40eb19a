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
carry_begin .carry/reuse2.tar.xz reuse2 "$OUT/header.log" rel v2 v2_set
carry_kernel_ab 2,3 rel:fp8attn_release v2:fp8attn_xtile_v2 v2_set:fp8attn_xtile_v2_set
