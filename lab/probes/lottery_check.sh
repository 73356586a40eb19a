#!/usr/bin/env bash
# Issue 13 on the GPU machine, one call (~3-6 minutes): lottery_ab.py over the libraries of the
# .carry/lot*.tar.xz archives (staged by lab/probes/lottery_stage.sh: TAGrel = a tree + the lab-only
# host knobs of lab/variants/host-knobs.patch; TAGrul0, ... = the same build with the two 192-key E4M3
# kernels compiled under another ptxas option), each configuration head to head with FA3 FP8
# (LOT_PEER=fa3_bf16: with FA3 BF16).
#   bash lab/probes/lottery_check.sh TAG=FOLDER[,ENV=VALUE...] ...   (FOLDER inside the archives)
# With LOT_TESTS=FOLDER (a carry_stage folder with tests/, in .carry/lot-tests.tar.xz), its kernel
# tests run first. Carry the archives and .whl (the wheel only if the machine is cold).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
carry_lot "$1" "$OUT/lottery.log"
if [[ -n "${LOT_TESTS:-}" ]]; then
  (carry_env "$B/$LOT_TESTS"; carry_tests "$B/$LOT_TESTS" "$OUT/lottery-tests.log" test_attention:150 test_nonfinite:60) 2>&1 | tee -a "$OUT/lottery.log"
fi
configs=()
for c in "$@"; do
  tag=${c%%=*} rest=${c#*=}
  configs+=(--config "$tag=$B/${rest%%,*}/libfp8attn.so${rest#"${rest%%,*}"}")
done
timeout "${LOT_TIMEOUT:-480}" python3 lab/probes/lottery_ab.py --out "$OUT" --rounds "${LOT_ROUNDS:-2}" \
  --shapes "${LOT_SHAPES:-6}" --shape-set "${LOT_SHAPE_SET:-short}" --peer "${LOT_PEER:-fa3_fp8}" \
  ${LOT_DATA:+--data "$LOT_DATA"} \
  "${configs[@]}" 2>&1 | tee -a "$OUT/lottery.log"
