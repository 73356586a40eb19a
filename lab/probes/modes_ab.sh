#!/usr/bin/env bash
# Lab, GPU machine, one call: a variant library staged as .carry/lot-TAG.tar.xz (folder TAG,
# lab/probes/patch_stage.sh or the like) beside .carry/lot.tar.xz's rel: the release's tests (the
# bundle's test binaries) on TAG's library, then the default and the accurate mode of rel and TAG
# head to head with FA3 FP8 on the sweep's first LOT_SHAPES rows (default 6: 8k, 8k GQA 32/8,
# 16 x 1k, both masks).
#   bash lab/probes/modes_ab.sh TAG [TAG...]   (the twenty-sixth session ran it as pcs_check.sh, TAG pcs)
# Several TAGs: each one's tests, then one lottery with rel and every TAG in both modes.
# MODES_TESTS: the test binaries and their limits (default: attention, vt_fp16, nonfinite).
# Carry .carry/bundle.tar.xz, .carry/lot.tar.xz, .carry/lot-TAG.tar.xz and FA3.
set -u
cd "$(dirname "$0")/../.."
tags=("$@")
[[ ${#tags[@]} -gt 0 ]] || { echo "usage: modes_ab.sh TAG [TAG...]"; exit 2; }
export OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
carry_bundle
carry_lot "${tags[0]}=${tags[0]}" "$OUT/${tags[0]}.log" > /dev/null
configs=(rel=rel racc=rel,MODE=fp8attn_accurate)
for tag in "${tags[@]}"; do
  (export LD_LIBRARY_PATH="$B/$tag:$PWD/.carry:$PWD/.carry/fallback/openblas:$PWD/.carry/fallback/gomp"
   carry_tests .carry "$OUT/$tag-tests.log" ${MODES_TESTS:-test_attention:200 test_vt_fp16:120 test_nonfinite:60}) 2>&1 | tee -a "$OUT/${tags[0]}.log"
  configs+=("$tag=$tag" "${tag}acc=$tag,MODE=fp8attn_accurate")
done
LOT_TIMEOUT=${LOT_TIMEOUT:-420} carry_lottery sweep "${LOT_SHAPES:-6}" "${configs[@]}" | tee -a "$OUT/${tags[0]}.log"
