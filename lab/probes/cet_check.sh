#!/usr/bin/env bash
# The GPU machine, one call (~8 minutes): causal tiles aligned to the end of the sequence
# (branch causal-end-tiles, lab/variants/causal-end-tiles.patch; lab/perf-log.md, thirtieth
# session). Carry .carry/bundle-cet.tar.xz (scripts/stage_gpu.sh BUNDLE=1 on the branch, renamed:
# its library is "cet" and its tests check it), .carry/lot-head.tar.xz and .carry/lot-cet.tar.xz
# (lab/probes/patch_stage.sh head=host-knobs.patch cet=host-knobs.patch+causal-end-tiles.patch)
# and .carry/fa3_site.tar.xz:
#   1. the branch's kernel tests (test_attention: its causal shapes of 64 and 129 rows are
#      shifted; test_fuzz at 400 shapes; test_fp16_vt_three_warpgroups: 1000 and 2000 rows shifted
#      by 128 and 64; test_nonfinite, test_vt_fp16, test_graphs) and compute-sanitizer's
#      memcheck, racecheck and synccheck on Sanitize.DefaultCausalShifted;
#   2. (carry_lottery: $OUT/lottery-sweep.{log,json}) head (HEAD + host knobs) against cet (the same + the patch), head to head with FA3 FP8 on
#      the sweep's 18 rows, the default and the accurate mode. Output hashes must equal head's at
#      every row (the shift moves no warp's rows); only 2 x 8000 causal takes a shift there.
#   PART=tests or PART=ab runs one half (each well under the 600 s limit alone).
set -u
cd "$(dirname "$0")/../.."
source lab/probes/carry.sh
export OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
PART=${PART:-all}
if [[ $PART == all || $PART == tests ]]; then
  carry_branch_tests .carry/bundle-cet.tar.xz cet test_attention:200 test_fuzz:200 \
    test_fp16_vt_three_warpgroups:60 test_nonfinite:60 test_vt_fp16:60 test_graphs:60
  carry_sanitize "$C" "$OUT/cet-tests-full.log" DefaultCausalShifted | tee -a "$OUT/cet-tests.log"
fi
if [[ $PART == all || $PART == ab ]]; then
  LOT_TIMEOUT=300 carry_lottery sweep 18 head=head cet=cet hacc=head,MODE=fp8attn_accurate \
    cacc=cet,MODE=fp8attn_accurate
  grep -h "output hashes" "$OUT/lottery-sweep.log"
fi
