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
carry_begin .carry/reuse.tar.xz reuse "$OUT/header.log" rel ffma loop
carry_kernel_ab 0,1,2,3 rel:fp8attn_release ffma:fp8attn_noreuse_ffma loop:fp8attn_noreuse_loop
