#!/usr/bin/env bash
# Load placement in the rolled loops of the Q and K row kernels (rotated, scale per row / known)
# at a commit (no GPU): tools/sass/loop_loads.py on quantize_q.cu and quantize_kv.cu for sm_90a.
#   tools/sass/prepass_loads.sh [REV]   (default: the working tree)
set -euo pipefail
cd "$(dirname "$0")/../.."
REV=${1:-}
CUOBJDUMP=${CUOBJDUMP:-/work/main/.cache/triton-bin/triton/backends/nvidia/bin/cuobjdump}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -n "$REV" ]]; then
  git archive "$REV" include src | tar -x -C "$tmp"
else
  cp -r include src "$tmp/"
fi
echo "# load placement, sm_90a, $(nvcc --version | tail -1)"
echo "# source: ${REV:-working tree at $(git rev-parse --short=12 HEAD)}"
for f in quantize_q quantize_kv; do
  nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
    -Xptxas=-v -I"$tmp/include" -I"$tmp/src" -cubin -o "$tmp/$f.cubin" "$tmp/src/quant/$f.cu" \
    2> "$tmp/$f.ptxas"
  "$CUOBJDUMP" -sass "$tmp/$f.cubin" > "$tmp/$f.sass" 2>/dev/null
  # Rotated kernels with a scale per row (Q, the default) or known per head (K, the default).
  python3 tools/sass/loop_loads.py "$tmp/$f.sass" --kernel 'ILb1ELNS0_4rows5ScaleE[02]E' |
    sed 's/_ZN7fp8attn5quant[0-9]*_GLOBAL__N__[0-9a-f]*_[0-9]*_[a-z_]*_cu_[0-9a-f]*[0-9]*//'
  grep -A2 "ILb1ELNS0_4rows5ScaleE[02]E" "$tmp/$f.ptxas" | grep -E "spill|Used" |
    sed 's/ptxas info *: //; s/^ */  /'
done
