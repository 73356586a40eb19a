#!/usr/bin/env bash
# The accurate mode's row-sum kernel (fp16_vt_block192_rowsum) under ptxas register usage level
# 0 (lab/variants/fp16-rowsum-rul0.patch: fewer spills in its key loop), and the same kernel for
# causal calls too (+ fp16-rowsum-causal.patch), on the GPU machine in one call (~4 minutes):
# both libraries' kernel-only errors (lib_errors_gpu.py, a correctness screen), then the accurate
# mode of rel (this tree's release, lottery_stage.sh none), rs0 and rsc head to head with FA3 BF16
# over the sweep, two rounds. rel and rs0 run the same causal kernel, so their causal rows
# measure the lottery's own spread.
# Here: bash lab/probes/lottery_stage.sh none; bash lab/probes/patch_stage.sh
#   rs0=fp16-rowsum-rul0.patch rsc=fp16-rowsum-rul0.patch+fp16-rowsum-causal.patch; then
#   bash lab/probes/fp16rs_check.sh --stage   (the two variants in one archive, .carry/lot-rs.tar.xz)
# There: bash lab/probes/fp16rs_check.sh   (carry .carry/lot.tar.xz, .carry/lot-rs.tar.xz,
# .carry/fa3_site.tar.xz; with the tree that is near 64 MiB: set large tracked results aside)
# Run on 2026-12-03 (lab/results/probe/2026-12-03-h200-a2bc8d6-fp16rs-*) and merged (rsc is the
# library since): the two patches apply to a2bc8d6 and earlier only; kept as the record.
set -u
cd "$(dirname "$0")/../.."
if [[ "${1:-}" == --stage ]]; then
  tmp=$(mktemp -d)
  for v in rs0 rsc; do tar -xJf ".carry/lot-$v.tar.xz" -C "$tmp" && mv "$tmp/BUILDS" "$tmp/BUILDS.$v"; done
  cat "$tmp"/BUILDS.* > "$tmp/BUILDS" && rm "$tmp"/BUILDS.*
  (cd "$tmp" && tar -cf - BUILDS rs0 rsc | xz -9 -T2 > "$OLDPWD/.carry/lot-rs.tar.xz") &&
    rm -f .carry/lot-rs0.tar.xz .carry/lot-rsc.tar.xz && du -sh .carry/lot-rs.tar.xz
  rm -rf "$tmp"
  exit
fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
# (the 2026-12-03 run screened the errors of rs0 and rsc only; this also screens rel's)
carry_accurate_ab "$OUT/fp16rs.log" rel rs0 rsc
