#!/usr/bin/env bash
# The accurate mode's row-sum kernel (fp16_vt_block192_rowsum, both masks) compiled with ptxas -O1
# (lab/variants/fp16-rowsum-o1.patch) against the release's register usage level 0, on the GPU
# machine in one call (~3 minutes): both libraries' kernel-only errors (lib_errors_gpu.py, a
# correctness screen; the arithmetic is the same, so they must agree), then the accurate mode of
# rel and o1 head to head with FA3 BF16 over the sweep, two rounds.
# Here: bash lab/probes/lottery_stage.sh none; bash lab/probes/patch_stage.sh o1=fp16-rowsum-o1.patch
# There: bash lab/probes/fp16o1_check.sh   (carry .carry/lot.tar.xz, .carry/lot-o1.tar.xz,
# .carry/fa3_site.tar.xz)
# Run on 2026-12-03 with LOT_SHAPES=8 (lab/results/probe/2026-12-03-h200-e55a367-fp16o1-*): not merged.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
carry_accurate_ab "$OUT/fp16o1.log" rel o1
