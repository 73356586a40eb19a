#!/usr/bin/env bash
# Branch k3s on the GPU machine, one call (~2 minutes): k3's division removal in the short-tile
# (TMA-store) configuration only. 1. Its kernel-level tests. 2. k3s against the release library,
# each head to head with FA3 FP8 at 1k-8k (kernel_ab.py; the long-tile kernel's SASS is the
# release one, so the 4k/8k rows are a control).
# Here: bash lab/probes/k3s_stage.sh (builds both, packs .carry/k3s.tar.xz with k3s/ and rel/).
# Carry [".carry/k3s.tar.xz", ".whl"]. Writes $OUT/k3s-tests.log and $OUT/kernel_ab.json.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
B=$(carry_unpack .carry/k3s.tar.xz k3s)
carry_fa3
carry_header "$B/k3s" | tee "$OUT/k3s-tests.log"
carry_env "$B/k3s"
carry_tests "$B/k3s" "$OUT/k3s-tests.log" test_attention:100 test_graphs:40 test_nonfinite:40 test_attention_args:40
timeout 120 python3 lab/probes/kernel_ab.py --lib "$B/rel/libfp8attn.so" \
  --variant-lib "$B/k3s/libfp8attn.so" --variant-tags fp8attn_release,fp8attn_k3s --no-blocks \
  --variant-rows 0,1,2,3 --runs 100 --out "$OUT" 2>&1 | grep -v "kernel-only" | grep -v "^block size"
