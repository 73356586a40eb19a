#!/usr/bin/env bash
# The GPU machine, one call (~6 minutes): the epilogue with the per-head V descale folded into each
# row's 1 / l and the empty-row selects only in warps that hold such a row
# (lab/variants/epi-fold.patch; lab/perf-log.md, twentieth session).
# Carry .carry/bundle.tar.xz (scripts/stage_gpu.sh BUNDLE=1 of the patched tree: its library is
# "fold" and its tests check it), .carry/lot.tar.xz (lottery_stage.sh none at HEAD: rel) and
# .carry/fa3_site.tar.xz.
#   1. the patched tree's kernel tests (test_attention with the new BroadcastVDescale cases,
#      test_nonfinite, test_vt_fp16, test_quant_attention, test_graphs);
#   2. the default mode, rel against fold, head to head with FA3 FP8: the trim set's first 6 rows
#      (16 x 1k and 8 x 2k both masks, 4k and 8k causal), then the seed (both masks);
#   3. the accurate mode, rel against fold, head to head with FA3 BF16 on the trim set's first 4.
# Output hashes differ from rel's by design (o * (v_descale / l) rounds once less than
# (o * v_descale) / l): the tests are the check.
set -u
cd "$(dirname "$0")/../.."
source lab/probes/carry.sh
carry_bundle
FOLD=$BUNDLE_LIB
CARRY=.carry
carry_tests $CARRY "$OUT/tests-full.log" test_attention:200 test_nonfinite:60 test_vt_fp16:60 test_quant_attention:60 test_graphs:60 | tee "$OUT/tests.log"
grep -h "BroadcastVDescale" /tmp/test_attention.log | grep -E "OK|FAILED" | head -12 >> "$OUT/tests.log"
carry_lot rel=rel /tmp/lot-header.log > /dev/null
cat /tmp/lot-header.log >> "$OUT/tests-full.log"  # (only 8 files come back)
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
ab() {  # NAME SET N PEER MODE
  local mode=${5:+,MODE=$5}
  timeout 200 python3 lab/probes/lottery_ab.py --out "$OUT/$1" --rounds 2 --shapes "$3" --shape-set "$2" \
    --peer "$4" --config "rel=$B/rel/libfp8attn.so$mode" --config "fold=$FOLD$mode" > "$OUT/$1.log" 2>&1
  grep -A12 "mean over rounds" "$OUT/$1.log" | sed "s/^/$1 /"
  grep -h "output hashes" "$OUT/$1.log" | sed "s/^/$1 /"
}
ab default-trim trim 6 fa3_fp8
ab default-seed sweep 2 fa3_fp8
ab accurate-trim trim 4 fa3_bf16 fp8attn_accurate
