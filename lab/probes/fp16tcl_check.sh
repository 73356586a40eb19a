#!/usr/bin/env bash
# l from the tensor core in the accurate mode's kernel (branch fp16tcl: the 192-key FP16 V^T
# kernel's P V as m64n136k16 against each FP16 half followed by 8 rows of FP16 ones, the row sums
# of the FP16 P in its last 8 columns, as the E4M3 causal kernel's kFusedRowSum), on the GPU
# machine in one call (~5 minutes): both libraries' kernel-only errors (lib_errors_gpu.py, a
# correctness screen), then their accurate mode head to head with FA3 BF16 over the sweep.
# Here: the branch's library as .carry/lot-tcl.tar.xz (folder tcl), main's (the trim, c9cb096's
# kernel) as .carry/lot-ft.tar.xz (folder ft, fp16trim_check.sh --stage).
# There: bash lab/probes/fp16tcl_check.sh   (carry .carry/lot-ft.tar.xz, .carry/lot-tcl.tar.xz,
# .carry/fa3_site.tar.xz)
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
# $OUT/lottery-sweep.{log,json} (the fifteenth session's run named them lottery-fp16tcl.*)
carry_accurate_ab "$OUT/fp16tcl.log" ft tcl
