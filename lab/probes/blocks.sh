#!/usr/bin/env bash
# Key-block size of the one-level E4M3 kernel at the seed shape, both masks, with correctness on
# two awkward shapes per variant. Runs on the GPU machine; .carry from lab/probes/stage.sh.
set -u
export LD_LIBRARY_PATH=$PWD/.carry:${LD_LIBRARY_PATH:-}
P=.carry/kernel_probe
echo "commit: $(cat .carry/COMMIT 2>/dev/null) date: $(date -u +%FT%TZ)"
for bn in 192 224; do
  for shape in "3 1000 1000 5 5 1" "4 1000 1000 40 8 0"; do
    echo "[block_n=$bn] $(FP8ATTN_BLOCK_N=$bn timeout 60 $P $shape 3 32 0 2>&1) rc=$?"
  done
  for c in 0 1; do
    echo "[block_n=$bn] $(FP8ATTN_BLOCK_N=$bn timeout 60 $P 2 8192 8192 32 32 $c 100 4 0 2>&1)"
  done
done
for c in 0 1; do timeout 120 python3 lab/probes/sdpa_ref.py 2 8192 32 $c 100 2>&1 | head -1; done
