#!/usr/bin/env bash
# The steady-state loop of chosen attention-kernel configurations in a built libfp8attn.so (no
# GPU): extracts each configuration's cubin with cuobjdump and runs lab/sass/inner_loop.py on its
# SASS (size, start mod 128, stall counts, the instruction classes that bound a block), and every
# loop holding at least four wgmmas (the key loops and the tile loop: size, wgmmas, local accesses).
#   lab/sass/kernel_loops.sh LIB OUTFILE CONFIG...    e.g. CONFIG = fp16_vt_block128
# cuobjdump: CUOBJDUMP, else on PATH (the CUDA toolkit's, or the nvidia-cuda-cuobjdump wheel's).
set -euo pipefail
cd "$(dirname "$0")/../.."
lib=$(realpath "$1") out=$2
shift 2
cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || true)}
[[ -x "$cuobjdump" ]] || { echo "kernel_loops: no cuobjdump (set CUOBJDUMP)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo "# lab/sass/kernel_loops.sh $lib $out $*"
  echo "# commit $(git rev-parse --short=12 HEAD)$([[ -n "$(git status --porcelain -- src include)" ]] && echo -dirty), $(date -u '+%Y-%m-%d %H:%M UTC'), $("$cuobjdump" --version | tail -1)"
  for c in "$@"; do
    # The cubin's name: <config>.sm_90a.cubin, or .sm_90.cubin from an older cuobjdump.
    (cd "$tmp" && for arch in sm_90a sm_90; do "$cuobjdump" -xelf "$c.$arch.cubin" "$lib" >/dev/null 2>&1 || true; done)
    "$cuobjdump" -sass "$(ls "$tmp/$c".sm_90*.cubin)" > "$tmp/$c.sass"
    python3 lab/sass/inner_loop.py "$tmp/$c.sass" | sed "s|$tmp/||"
    python3 lab/sass/inner_loop.py --all-loops "$tmp/$c.sass"
  done
} | tee "$out"
