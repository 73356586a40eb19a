#!/usr/bin/env bash
# Row sums of P from the tensor core (FP8ATTN_VARIANT=tc-rowsum): correctness (and LSE) on
# awkward shapes, then the seed shape's speed beside the default and SDPA BF16 in the same run.
# Runs on the GPU machine; .carry from tools/kernel_probe/stage.sh.
set -u
export LD_LIBRARY_PATH=$PWD/.carry:${LD_LIBRARY_PATH:-}
P=.carry/kernel_probe
echo "commit: $(cat .carry/COMMIT 2>/dev/null) date: $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv
echo "== correctness (kernel-only error vs FP64 on dequantized inputs; rc 0 = pass)"
for v in tc-rowsum default; do
  for shape in "1 1 1 1 1 0" "3 127 127 5 5 0" "3 1000 1000 5 5 1" "1 127 300 4 2 1" "1 300 127 4 2 1" \
               "1 8191 8191 2 1 1" "2 2048 2048 32 8 0" "4 1000 1000 40 8 1" "3 4097 4097 7 7 0" \
               "1 16384 16384 2 2 0"; do
    FP8ATTN_VARIANT=$v timeout 60 $P $shape 3 32 0 > /tmp/line 2>&1
    echo "[$v] rc=$? $(cat /tmp/line)"
  done
done
echo "== speed (b=2 s=8192 h=32)"
for c in 0 1; do
  for v in "FP8ATTN_VARIANT=default" "FP8ATTN_VARIANT=tc-rowsum" "FP8ATTN_VARIANT=tc-rowsum FP8ATTN_BLOCK_N=224" \
           "FP8ATTN_VARIANT=tc-rowsum FP8ATTN_SCHED=head" "FP8ATTN_VARIANT=default" "FP8ATTN_VARIANT=tc-rowsum"; do
    echo "[$v] $(env $v timeout 60 $P 2 8192 8192 32 32 $c 100 4 0 2>&1)"
  done
  echo "[tc-rowsum gqa 32/8] $(FP8ATTN_VARIANT=tc-rowsum timeout 60 $P 2 8192 8192 32 8 $c 100 4 0 2>&1)"
  timeout 120 python3 tools/kernel_probe/sdpa_ref.py 2 8192 32 $c 100 2>&1 | head -1
done
