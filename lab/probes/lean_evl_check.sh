#!/usr/bin/env bash
# On the GPU machine, one call (~7 minutes): the twelfth session's staged probes
# (lab/perf-log.md, 2026-12-02 twelfth session, "staged" entries), from lean_evl_stage.sh's
# archives:
#   1. lottery_ab.py, --shape-set all (11 rows), rel / lean / evl / both, each head to head with
#      FA3 FP8 (two rounds);
#   2. the same with --shape-set sections (6 causal rows, sq 2k x sk 16k first) and the first two
#      rows of --shape-set waves (sq 2k x sk 16k non-causal, GQA and MHA), rel / evl / both;
#   3. the tile fit (ncu at fixed clocks), rel / lean;
#   4. lab/probes/one_pass_seeds_gpu.py on the bundle's library (10 seeds).
# Files in $OUT: lottery-{all,sections,waves}.{log,json}, tile-fit.{txt,log}, tile-fit-ncu.tar.gz,
# one-pass-seeds-gpu.{json,log}.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
carry_lottery all 11 rel=rel lean=lean evl=evl both=both
carry_lottery sections 6 rel=rel evl=evl both=both
carry_lottery waves 2 rel=rel evl=evl both=both
bash lab/probes/tile_fit_check.sh rel=rel lean=lean > /dev/null 2>&1; tail -12 "$OUT/tile-fit.txt"
mkdir -p .carry && tar -xJf .carry/bundle.tar.xz -C .carry
(carry_env .carry
 timeout 150 python3 lab/probes/one_pass_seeds_gpu.py .carry/libfp8attn.so "$OUT/one-pass-seeds-gpu.json" 10) \
  2>&1 | tee "$OUT/one-pass-seeds-gpu.log" | tail -6
