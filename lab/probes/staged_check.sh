#!/usr/bin/env bash
# The GPU machine, one call (~5-6 minutes): the non-causal kernel's O through a per-warp staging
# area and 16-byte stores (lab/variants/staged-store.patch; lab/perf-log.md, twentieth session).
# Carry .carry/bundle.tar.xz (scripts/stage_gpu.sh BUNDLE=1 of the patched tree: its library is
# "staged" and its tests check it), .carry/lot.tar.xz (lottery_stage.sh none: rel, the release's
# device code), .carry/capq/ (one capture file) and .carry/fa3_site.tar.xz.
#   1. the patched tree's GPU tests (test_attention, test_nonfinite, test_graphs,
#      test_attention_args, test_validation), then memcheck, racecheck and synccheck on
#      Sanitize.DefaultFull (the staged kernel at a persistent shape);
#   2. the default mode, rel against staged, head to head with FA3 FP8 on the sweep's nine
#      non-causal rows (--shape-set nc), two rounds; then 8 x 2k on a capture's activations.
# Output hashes must equal rel's (the same arithmetic; only the stores changed).
set -u
cd "$(dirname "$0")/../.."
source lab/probes/carry.sh
carry_bundle
STAGED=$BUNDLE_LIB
CARRY=.carry
carry_tests $CARRY "$OUT/tests-full.log" test_attention:200 test_nonfinite:60 test_graphs:60 test_attention_args:60 test_validation:60 | tee "$OUT/tests.log"
carry_sanitize $CARRY "$OUT/tests-full.log" | tee -a "$OUT/tests.log"
carry_lot rel=rel /tmp/lot-header.log > /dev/null
cat /tmp/lot-header.log >> "$OUT/tests-full.log"  # (only 8 files come back)
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
ab() {  # NAME SET N [DATA]
  timeout 240 python3 lab/probes/lottery_ab.py --out "$OUT/$1" --rounds 2 --shapes "$3" --shape-set "$2" \
    --peer fa3_fp8 ${4:+--data "$4"} --config "rel=$B/rel/libfp8attn.so" --config "staged=$STAGED" \
    > "$OUT/$1.log" 2>&1
  grep -A20 "mean over rounds" "$OUT/$1.log" | sed "s/^/$1 /"
  grep -h "output hashes" "$OUT/$1.log" | sed "s/^/$1 /"
}
ab default-nc nc 9
f=$(ls $CARRY/capq/*.safetensors 2>/dev/null | head -1)
[[ -n $f ]] && ab default-captured captured 1 "$f"
