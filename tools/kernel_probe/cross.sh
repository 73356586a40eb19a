#!/usr/bin/env bash
# The tc-rowsum-cross variant was removed after this measurement (results/probe/*-5cdccf9-cross.log:
# slower than the default); the script is kept as the record of what was run.
# Tile boundaries folded into the steady state (FP8ATTN_VARIANT=tc-rowsum-cross) against the
# default: correctness on awkward shapes (many tiles per CTA, empty tiles, GQA), then the seed
# shape's speed beside SDPA BF16. .carry from tools/kernel_probe/stage.sh (or stage_gpu + probe).
set -u
export LD_LIBRARY_PATH=$PWD/.carry:${LD_LIBRARY_PATH:-}
P=.carry/kernel_probe
echo "commit: $(cat .carry/COMMIT 2>/dev/null) date: $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv
echo "== correctness (kernel-only error vs FP64 on dequantized inputs; rc 0 = pass)"
for v in tc-rowsum-cross default; do
  for shape in "1 1 1 1 1 0" "3 127 127 5 5 0" "3 1000 1000 5 5 1" "1 127 300 4 2 1" "1 300 127 4 2 1" \
               "1 8191 8191 2 1 1" "2 2048 2048 32 8 0" "4 1000 1000 40 8 1" "3 4097 4097 7 7 0" \
               "2 300 100 64 8 1" "8 513 700 40 8 1" "1 16384 16384 4 4 1"; do
    FP8ATTN_VARIANT=$v timeout 60 $P $shape 3 64 0 > /tmp/line 2>&1
    echo "[$v] rc=$? $(cat /tmp/line)"
  done
done
echo "== speed (b=2 s=8192 h=32)"
for c in 0 1; do
  for v in default tc-rowsum-cross default tc-rowsum-cross default tc-rowsum-cross; do
    echo "[$v] $(FP8ATTN_VARIANT=$v timeout 60 $P 2 8192 8192 32 32 $c 100 4 0 2>&1)"
  done
  echo "[tc-rowsum-cross gqa 32/8] $(FP8ATTN_VARIANT=tc-rowsum-cross timeout 60 $P 2 8192 8192 32 8 $c 100 4 0 2>&1)"
  timeout 120 python3 tools/kernel_probe/sdpa_ref.py 2 8192 32 $c 100 2>&1 | head -1
done
