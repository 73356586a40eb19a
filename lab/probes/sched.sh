#!/usr/bin/env bash
# Causal tile order (FP8ATTN_SCHED), the polynomial exp2 share (FP8ATTN_POLY_EXP_EVERY) and the
# key block of causal (FP8ATTN_BLOCK_N): correctness on awkward causal shapes for each order,
# then the seed shape's speed per variant next to SDPA BF16 in the same run.
# Runs on the GPU machine; .carry from lab/probes/stage.sh.
source "$(dirname "$0")/lib.sh"
probe_init
echo "== correctness (kernel-only error vs FP64 on dequantized inputs; rc 0 = pass)"
for sched in section head; do
  probe_check "FP8ATTN_SCHED=$sched" "3 1000 1000 5 5 1" "1 127 300 4 2 1" "1 300 127 4 2 1" "1 8191 8191 2 1 1" "2 2048 2048 32 8 1" "4 1000 1000 40 8 1" "3 4097 4097 7 7 1"
done
for pe in 4 8; do
  probe_check "FP8ATTN_POLY_EXP_EVERY=$pe" "3 1000 1000 5 5 1" "2 2048 2048 32 8 0"
done
echo "== speed (b=2 s=8192 h=32)"
for c in 1 0; do
  for v in "FP8ATTN_SCHED=section" "FP8ATTN_SCHED=head" "FP8ATTN_POLY_EXP_EVERY=8" \
           "FP8ATTN_POLY_EXP_EVERY=4" "FP8ATTN_BLOCK_N=128"; do
    echo "[$v] $(env $v timeout 60 $P 2 8192 8192 32 32 $c 100 4 0 2>&1)"
  done
  echo "[gqa 32/8 default] $(timeout 60 $P 2 8192 8192 32 8 $c 100 4 0 2>&1)"
  probe_sdpa $c
done
