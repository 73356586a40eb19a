#!/usr/bin/env bash
# Lab, GPU machine, one call: the P V issued in pieces (lab/variants/pv-pieces.patch, staged as
# .carry/lot-pcs.tar.xz beside .carry/lot.tar.xz's rel): the release's tests (the bundle's test
# binaries) on the pieces library, then the default and the accurate mode of rel and pcs head to
# head with FA3 FP8 on the sweep's first LOT_SHAPES rows (default 6: 8k, 8k GQA 32/8, 16 x 1k,
# both masks). Carry .carry/bundle.tar.xz, .carry/lot.tar.xz, .carry/lot-pcs.tar.xz and FA3.
set -u
cd "$(dirname "$0")/../.."
export OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
carry_bundle
carry_lot "pcs=pcs" "$OUT/pcs.log" > /dev/null
(export LD_LIBRARY_PATH="$B/pcs:$PWD/.carry:$PWD/.carry/fallback/openblas:$PWD/.carry/fallback/gomp"
 carry_tests .carry "$OUT/pcs-tests.log" test_attention:200 test_vt_fp16:120 test_nonfinite:60) 2>&1 | tee -a "$OUT/pcs.log"
LOT_TIMEOUT=${LOT_TIMEOUT:-420} carry_lottery sweep "${LOT_SHAPES:-6}" rel=rel pcs=pcs \
  racc=rel,MODE=fp8attn_accurate pacc=pcs,MODE=fp8attn_accurate | tee -a "$OUT/pcs.log"
