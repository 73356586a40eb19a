#!/usr/bin/env bash
# Issue 13 on the GPU machine, one call (~5 minutes): what the operand-reuse flags of the E4M3
# kernels' steady-state loop are worth. The release library against two copies with the flags
# cleared (reuse_stage.sh), each in its own process head to head with FA3 FP8 at 1k-8k, both
# masks, and kernel-only error on the outlier and Gaussian sets (kernel_ab.py: the bits must not
# change). Carry [".carry/reuse.tar.xz", ".whl"]. Writes $OUT/kernel_ab.json and $OUT/header.log.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
B=$(carry_unpack .carry/reuse.tar.xz reuse)
carry_fa3
carry_header "$B/rel" | tee "$OUT/header.log"
for v in rel ffma loop; do echo "$v: $(cat "$B/$v/COMMIT")" | tee -a "$OUT/header.log"; done
carry_env "$B/rel"
timeout 480 python3 lab/probes/kernel_ab.py --lib "$B/rel/libfp8attn.so" \
  --variant-lib "$B/ffma/libfp8attn.so" --variant-lib "$B/loop/libfp8attn.so" \
  --variant-tags fp8attn_release,fp8attn_noreuse_ffma,fp8attn_noreuse_loop --no-blocks \
  --variant-rows 0,1,2,3 --runs 100 --out "$OUT" 2>&1 | grep -v "^block size"
