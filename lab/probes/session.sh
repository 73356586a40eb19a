#!/usr/bin/env bash
# One GPU call for the kernel developer: correctness of every kernel variant on awkward shapes,
# then speed of each variant at the seed shape next to SDPA BF16 in the same run.
# Runs on the GPU machine from the repo root; expects .carry/ from lab/probes/stage.sh.
set -u
export LD_LIBRARY_PATH=$PWD/.carry:${LD_LIBRARY_PATH:-}
P=.carry/kernel_probe
echo "commit: $(cat .carry/COMMIT 2>/dev/null) date: $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv
# variant = environment for the knobs (see src/api.cu knob_settings) + p_precision argument
VARIANTS=("FP8ATTN_ACCUMULATION=one-level|0"
          "FP8ATTN_ACCUMULATION=one-level FP8ATTN_PERSISTENT=1|0"
          "FP8ATTN_ACCUMULATION=one-level FP8ATTN_POLY_EXP_EVERY=4|0"
          "FP8ATTN_ACCUMULATION=one-level FP8ATTN_POLY_EXP_EVERY=8|0"
          "FP8ATTN_ACCUMULATION=one-level FP8ATTN_POLY_EXP_EVERY=4 FP8ATTN_PERSISTENT=1|0"
          "FP8ATTN_ACCUMULATION=two-level FP8ATTN_POLY_EXP_EVERY=4 FP8ATTN_PERSISTENT=1|0"
          "FP8ATTN_ACCUMULATION=two-level FP8ATTN_POLY_EXP_EVERY=4 FP8ATTN_PERSISTENT=1|1"
          "FP8ATTN_ACCUMULATION=one-level FP8ATTN_POLY_EXP_EVERY=4 FP8ATTN_PERSISTENT=1|1"
          "FP8ATTN_PERSISTENT=1|2")  # P FP16 (FP8ATTN_P_FP16; its one configuration ignores the other knobs)
echo "== correctness (kernel-only error vs FP64 on dequantized inputs; exit 0 = pass)"
for v in "${VARIANTS[@]}"; do
  envs=${v%|*}; pp=${v#*|}
  for shape in "1 1 1 1 1 0" "3 127 127 5 5 0" "3 1000 1000 5 5 1" "1 127 300 4 2 1" \
               "1 300 127 4 2 1" "1 8191 8191 2 1 1" "2 2048 2048 32 8 0" "4 1000 1000 40 8 1"; do
    env $envs timeout 60 $P $shape 3 32 $pp > /tmp/line 2>&1; rc=$?
    echo "[$envs p=$pp] rc=$rc $(cat /tmp/line)"
  done
done
echo "== speed (b=2 s=8192 h=32)"
for c in 0 1; do
  for v in "${VARIANTS[@]}"; do
    envs=${v%|*}; pp=${v#*|}
    echo "[$envs p=$pp] $(env $envs timeout 60 $P 2 8192 8192 32 32 $c 100 4 $pp 2>&1)"
  done
  timeout 120 python3 lab/probes/sdpa_ref.py 2 8192 32 $c 100
done
