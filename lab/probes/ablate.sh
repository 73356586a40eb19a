#!/usr/bin/env bash
# Where the time goes: the seed shape with one stage removed at a time (FP8ATTN_VARIANT=ablate-*,
# WRONG results on purpose, timing only), and the lazy-max softmax (correctness on awkward shapes
# first). Runs on the GPU machine; .carry from lab/probes/stage.sh.
source "$(dirname "$0")/lib.sh"
probe_init
echo "== correctness of lazy-max (kernel-only error vs FP64 on dequantized inputs; rc 0 = pass)"
for shape in "1 1 1 1 1 0" "3 127 127 5 5 0" "3 1000 1000 5 5 1" "1 127 300 4 2 1" "1 300 127 4 2 1" \
             "1 8191 8191 2 1 1" "2 2048 2048 32 8 0" "4 1000 1000 40 8 1" "3 4097 4097 7 7 0"; do
  FP8ATTN_VARIANT=lazy-max timeout 60 $P $shape 3 32 0 > /tmp/line 2>&1
  echo "[lazy-max] rc=$? $(cat /tmp/line)"
done
echo "== speed (b=2 s=8192 h=32)"
for c in 0 1; do
  for v in default lazy-max ablate-nosoftmax ablate-noexp ablate-nopv default; do
    echo "[$v] $(FP8ATTN_VARIANT=$v timeout 60 $P 2 8192 8192 32 32 $c 100 4 0 2>&1)"
  done
  probe_sdpa $c
done
