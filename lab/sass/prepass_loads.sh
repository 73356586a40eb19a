#!/usr/bin/env bash
# Load placement in the rolled loops of the Q and K row kernels (rotated, scale per row / known)
# at a commit (no GPU): lab/sass/loop_loads.py on quantize_q.cu and quantize_kv.cu for sm_90a.
#   lab/sass/prepass_loads.sh [REV]   (default: the working tree)
set -euo pipefail
cd "$(dirname "$0")/../.."
REV=${1:-}
source lab/sass/prepass_lib.sh
prepass_stage "$REV" "load placement" include src
for f in quantize_q quantize_kv; do
  prepass_sass "$tmp" "$f"
  # Rotated kernels with a scale per row (Q, the default) or known per head (K, the default).
  python3 lab/sass/loop_loads.py "$tmp/$f.sass" --kernel 'ILb1ELNS0_4rows5ScaleE[02]E' |
    sed 's/_ZN7fp8attn5quant[0-9]*_GLOBAL__N__[0-9a-f]*_[0-9]*_[a-z_]*_cu_[0-9a-f]*[0-9]*//'
  grep -A2 "ILb1ELNS0_4rows5ScaleE[02]E" "$tmp/$f.ptxas" | grep -E "spill|Used" |
    sed 's/ptxas info *: //; s/^ */  /'
done
