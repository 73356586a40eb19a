#!/usr/bin/env bash
# On the GPU machine, one call (~5 minutes): FA3 FP8's 224-key tile in our non-causal kernel
# (lab/variants/nc-224.patch; lab/perf-log.md, thirteenth session, "224-key blocks again"), staged
# here by
#   bash lab/probes/lottery_stage.sh none && bash lab/probes/patch_stage.sh nc224=nc-224.patch
# Carry .carry/lot.tar.xz, .carry/lot-nc224.tar.xz (move other lot-*.tar.xz aside: carry_lot
# unpacks every one) and .carry/fa3_site.tar.xz.
#   1. lab/probes/lib_errors_gpu.py on rel and nc224 (modes fp8attn, fp8attn_exact): the 224-key
#      kernels' kernel-only error beside FA3 FP8's (a correctness screen: no GPU test covers a lab
#      variant; its numerics: the default with l from the FP32 p, the exact mode FA3's arithmetic
#      in FA3's tile);
#   2. lottery_ab.py, --shape-set all (11 rows), head to head with FA3 FP8: rel and nc224 in the
#      default mode (causal rows: the same TMA-store 192-key kernel in both), relx and x224 in
#      FP8ATTN_P_E4M3_EXACT (every row: the patch moves both exact kernels to 224 keys).
# Files in $OUT (5): b224.log, errors-rel.json, errors-nc224.json, lottery-all.{json,log} (carry_lottery).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
{
carry_lot rel=rel "$OUT/b224.log" > /dev/null
for t in rel nc224; do
  timeout 120 python3 lab/probes/lib_errors_gpu.py "$B/$t/libfp8attn.so" "$OUT/errors-$t.json" \
    fp8attn,fp8attn_exact
  echo "lib_errors_gpu $t exit $?"
done
} 2>&1 | tee -a "$OUT/b224.log"
LOT_TIMEOUT=${LOT_TIMEOUT:-330} carry_lottery all 11 rel=rel nc224=nc224 relx=rel,MODE=fp8attn_exact \
  x224=nc224,MODE=fp8attn_exact
