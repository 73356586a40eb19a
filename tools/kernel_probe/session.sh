#!/usr/bin/env bash
# One GPU call for the kernel developer: correctness on awkward shapes, then speed of each
# variant at the seed shape next to SDPA BF16. Runs on the GPU machine from the repo root;
# expects the probe binary in .carry/.
set -u
export LD_LIBRARY_PATH=$PWD/.carry:${LD_LIBRARY_PATH:-}
P=.carry/kernel_probe
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv
echo "== correctness (kernel-only error vs FP64 on dequantized inputs; exit 0 = pass)"
for shape in "1 128 128 1 1 0" "1 1 1 1 1 0" "1 1 1 1 1 1" "3 127 127 5 5 0" "3 1000 1000 5 5 1" \
             "1 127 300 4 2 1" "1 300 127 4 2 1" "1 8191 8191 2 1 1" "2 2048 2048 32 8 1" "2 2048 2048 32 8 0"; do
  timeout 60 $P $shape 3 48; echo "rc=$?"
  FP8ATTN_ACCUMULATION=one-level timeout 60 $P $shape 3 48; echo "rc=$? (one-level)"
done
echo "== speed (b=2 s=8192 h=32)"
for c in 0 1; do
  timeout 60 $P 2 8192 8192 32 32 $c 100 8
  FP8ATTN_ACCUMULATION=one-level timeout 60 $P 2 8192 8192 32 32 $c 100 8
  FP8ATTN_PERSISTENT=1 timeout 60 $P 2 8192 8192 32 32 $c 100 8
  FP8ATTN_PERSISTENT=1 FP8ATTN_ACCUMULATION=one-level timeout 60 $P 2 8192 8192 32 32 $c 100 8
  timeout 120 python3 tools/kernel_probe/sdpa_ref.py 2 8192 32 $c 100
done
