#!/usr/bin/env bash
# The GPU machine, one call (~4-5 minutes): FP16 P's larger running-max slack
# (lab/variants/fp16-slack8.patch: FP8ATTN_FP16_RESCALE_SLACK_LOG2 = 8 instead of the E4M3 P's 3),
# lab/perf-log.md, nineteenth session.
# Carry .carry/bundle.tar.xz (scripts/stage_gpu.sh BUNDLE=1 of the patched tree: its library is
# s8 and its tests check it), .carry/lot.tar.xz (lottery_stage.sh none at the same HEAD: rel),
# .carry/capq/ (two capture files of the quick pack) and .carry/fa3_site.tar.xz.
#   1. the patched tree's kernel tests (test_attention: the FP16 kernels against the mirror, which
#      follows the new slack, and FP64; test_vt_fp16, test_quant_attention, test_nonfinite,
#      test_graphs);
#   2. the accurate mode, rel against s8, head to head with FA3 BF16: 8 x 2k (both masks) on each
#      capture file's activations (lottery_ab.py --data), then the seed's two rows on Gaussian data
#      (where the slack changes little: the no-regression check).
set -u
cd "$(dirname "$0")/../.."
source lab/probes/carry.sh
carry_bundle
CARRY=.carry
# test_attention: the FP16 P shapes (their names end in fp16...) and the checks of the checks.
for t in test_attention test_vt_fp16 test_quant_attention test_nonfinite; do
  filter=; [[ $t == test_attention ]] && filter='--gtest_filter=*fp16*:*Fp16*:Checks.*'
  timeout -k 10 150 $CARRY/tests/$t $filter > "$OUT/$t.log" 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) \]' "$OUT/$t.log" | tr '\n' ' ')"
done | tee "$OUT/tests.log"
carry_lot rel=rel "$OUT/slack.log" > /dev/null
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
S8=$BUNDLE_LIB
for f in $CARRY/capq/*.safetensors; do
  n=$(basename "$f" .safetensors)
  timeout 150 python3 lab/probes/lottery_ab.py --out "$OUT/$n" --rounds 2 --shapes 2 --shape-set captured \
    --data "$f" --peer fa3_bf16 --config "rel=$B/rel/libfp8attn.so,MODE=fp8attn_accurate" \
    --config "s8=$S8,MODE=fp8attn_accurate" > "$OUT/$n.log" 2>&1
  grep -A8 "mean over rounds" "$OUT/$n.log" | sed "s/^/$n /"
done
timeout 150 python3 lab/probes/lottery_ab.py --out "$OUT/seed" --rounds 2 --shapes 2 --shape-set sweep \
  --peer fa3_bf16 --config "rel=$B/rel/libfp8attn.so,MODE=fp8attn_accurate" \
  --config "s8=$S8,MODE=fp8attn_accurate" > "$OUT/seed.log" 2>&1
grep -A8 "mean over rounds" "$OUT/seed.log" | sed "s/^/seed /"
