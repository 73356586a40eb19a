#!/usr/bin/env bash
# The GPU machine: the exact softmax with l the mean of both row sums (branch exact-lmix,
# lab/variants/exact-lmix.patch; lab/perf-log.md, thirty-first session). Carry
# .carry/bundle-exmix.tar.xz (carry_stage on the branch: its library "exmix" and its tests),
# .carry/lot-head.tar.xz and .carry/lot-exmix.tar.xz (lab/probes/patch_stage.sh
# head=host-knobs.patch exmix=host-knobs.patch+exact-lmix.patch) and .carry/fa3_site.tar.xz.
#   PART=tests (~5 minutes): the branch's test_attention (check_mixed_l on the exact shapes),
#     test_fuzz, test_nonfinite, and memcheck / racecheck / synccheck on Sanitize.ExactCausal and
#     Sanitize.ExactFull; $OUT/exmix-tests{,-full}.log.
#   PART=ab (~6 minutes): kernel-only errors in the exact mode beside FA3 FP8's (head and exmix,
#     lib_errors_gpu.py: $OUT/errors-{head,exmix}.json), then the exact mode of head and of exmix
#     head to head with FA3 FP8 over the sweep's 18 rows, and head's default beside them in the
#     same rounds: what the default would give up on exmix's numerics ($OUT/lottery-sweep.{log,json}).
# Prediction (lab/perf-log.md): exmix's RMSE at or below FA3 FP8's on every cell, head's within
# about 1% of it either way; exmix 0-2% slower than head (8 more loop instructions and the fused
# row sums' 8 columns on the P V).
set -u
cd "$(dirname "$0")/../.."
source lab/probes/carry.sh
export OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
PART=${PART:-all}
if [[ $PART == all || $PART == tests ]]; then
  carry_branch_tests .carry/bundle-exmix.tar.xz exmix test_attention:200 test_fuzz:200 test_nonfinite:60
  for target in ExactCausal ExactFull; do
    carry_sanitize "$C" "$OUT/exmix-tests-full.log" "$target" | tee -a "$OUT/exmix-tests.log"
  done
fi
if [[ $PART == all || $PART == ab ]]; then
  carry_lot head=head "$OUT/exmix-ab.log" > /dev/null
  carry_lib_errors "$OUT/exmix-ab.log" fp8attn_exact head exmix
  LOT_TIMEOUT=400 carry_lottery sweep 18 head=head,MODE=fp8attn_exact exmix=exmix,MODE=fp8attn_exact \
    def=head,MODE=fp8attn
  grep -h "output hashes" "$OUT/lottery-sweep.log"
fi
