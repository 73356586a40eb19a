#!/usr/bin/env bash
# Row sums of P from the tensor core (FP8ATTN_VARIANT=tc-rowsum): correctness (and LSE) on
# awkward shapes, then the seed shape's speed beside the default and SDPA BF16 in the same run.
# Runs on the GPU machine; .carry from lab/probes/stage.sh.
source "$(dirname "$0")/lib.sh"
probe_init
echo "== correctness (kernel-only error vs FP64 on dequantized inputs; rc 0 = pass)"
for v in tc-rowsum default; do
  probe_check "FP8ATTN_VARIANT=$v" "${PROBE_SHAPES[@]}" "1 16384 16384 2 2 0"
done
echo "== speed (b=2 s=8192 h=32)"
for c in 0 1; do
  for v in "FP8ATTN_VARIANT=default" "FP8ATTN_VARIANT=tc-rowsum" "FP8ATTN_VARIANT=tc-rowsum FP8ATTN_BLOCK_N=224" \
           "FP8ATTN_VARIANT=tc-rowsum FP8ATTN_SCHED=head" "FP8ATTN_VARIANT=default" "FP8ATTN_VARIANT=tc-rowsum"; do
    echo "[$v] $(env $v timeout 60 $P 2 8192 8192 32 32 $c 100 4 0 2>&1)"
  done
  echo "[tc-rowsum gqa 32/8] $(FP8ATTN_VARIANT=tc-rowsum timeout 60 $P 2 8192 8192 32 8 $c 100 4 0 2>&1)"
  probe_sdpa $c
done
