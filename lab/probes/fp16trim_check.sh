#!/usr/bin/env bash
# The first-block trim in the 192-key FP16 V^T kernel (the accurate mode, fp8attn_accurate), on
# the GPU machine in one call (~6 minutes): the branch's GPU tests, then the accurate mode of the
# release library (rel: .carry/lot.tar.xz) and of the branch (ft: .carry/lot-ft.tar.xz) each head
# to head with FA3 BF16 over the harness's sweep, both masks, two rounds; output hashes compared.
# Here, first: `BUNDLE=1 NO_CAPTURES=1 scripts/stage_gpu.sh` on the branch, then
#   bash lab/probes/fp16trim_check.sh --stage      (the bundle's library as .carry/lot-ft.tar.xz)
# There: bash lab/probes/fp16trim_check.sh   (carry .carry/bundle.tar.xz, .carry/lot.tar.xz,
# .carry/lot-ft.tar.xz, .carry/fa3_site.tar.xz)
set -u
cd "$(dirname "$0")/../.."
if [[ "${1:-}" == --stage ]]; then
  tmp=$(mktemp -d) && mkdir -p "$tmp/ft"
  tar -xJf .carry/bundle.tar.xz -C "$tmp" libfp8attn.so COMMIT && mv "$tmp/libfp8attn.so" "$tmp/ft/" &&
    mv "$tmp/COMMIT" "$tmp/ft/COMMIT" && echo "ft: $(cat "$tmp/ft/COMMIT") (the bundle's library)" > "$tmp/BUILDS" &&
    (cd "$tmp" && tar -cf - BUILDS ft | xz -9 -T2 > "$OLDPWD/.carry/lot-ft.tar.xz") && du -sh .carry/lot-ft.tar.xz
  rm -rf "$tmp"
  exit
fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
PARTS=tests scripts/gpu_session.sh > "$OUT/tests.out" 2>&1
grep -E "^(stage|tests|  test_)|passed|failed" "$OUT/tests.out" | tail -20
rm -f "$OUT/session.log"
source lab/probes/carry.sh
# $OUT/lottery-sweep.{log,json} (the fifteenth session's run named them lottery-fp16trim.*)
LOT_TIMEOUT=${LOT_TIMEOUT:-420} LOT_PEER=fa3_bf16 carry_lottery sweep "${LOT_SHAPES:-18}" \
  rel=rel,MODE=fp8attn_accurate ft=ft,MODE=fp8attn_accurate
