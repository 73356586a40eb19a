#!/usr/bin/env bash
# The tc-rowsum-cross variant was removed after this measurement (lab/results/probe/*-5cdccf9-cross.log:
# slower than the default); the script is kept as the record of what was run.
# Tile boundaries folded into the steady state (FP8ATTN_VARIANT=tc-rowsum-cross) against the
# default: correctness on awkward shapes (many tiles per CTA, empty tiles, GQA), then the seed
# shape's speed beside SDPA BF16. .carry from lab/probes/stage.sh (or stage_gpu + probe).
source "$(dirname "$0")/lib.sh"
probe_init
echo "== correctness (kernel-only error vs FP64 on dequantized inputs; rc 0 = pass)"
for v in tc-rowsum-cross default; do
  ROWS=64 probe_check "FP8ATTN_VARIANT=$v" "${PROBE_SHAPES[@]}" "2 300 100 64 8 1" "8 513 700 40 8 1" "1 16384 16384 4 4 1"
done
echo "== speed (b=2 s=8192 h=32)"
for c in 0 1; do
  for v in default tc-rowsum-cross default tc-rowsum-cross default tc-rowsum-cross; do
    echo "[$v] $(FP8ATTN_VARIANT=$v timeout 60 $P 2 8192 8192 32 32 $c 100 4 0 2>&1)"
  done
  echo "[tc-rowsum-cross gqa 32/8] $(FP8ATTN_VARIANT=tc-rowsum-cross timeout 60 $P 2 8192 8192 32 8 $c 100 4 0 2>&1)"
  probe_sdpa $c
done
