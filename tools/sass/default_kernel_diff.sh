#!/usr/bin/env bash
# Runs HERE (no GPU): compiles the default kernel (E4M3 P, one-level, 192-key blocks, l from the
# tensor core) from two source trees and compares their SASS: the whole kernel's instruction
# count, and the instructions of every loop of >= 200 (tools/sass/loops.py: the steady-state key
# loop). Used to show that a change confined to the epilogue leaves the key loop unchanged.
#   [CUOBJDUMP=path] tools/sass/default_kernel_diff.sh BASE_COMMIT > results/<name>.txt   (new: the working tree)
set -euo pipefail
cd "$(dirname "$0")/../.."
NEW=$PWD
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
BASE=$TMP/base; mkdir -p "$BASE"
git archive "$1" src include | tar -x -C "$BASE"
cat > "$TMP/inst.cu" <<'CU'
#include "attn/kernel.cuh"
using namespace fp8attn::attn;
void* default_kernel() {  // taking its address instantiates it
  return reinterpret_cast<void*>(&attention_fwd_kernel<Config<PPrecision::kE4M3, false, 192, 2, 0, kVariantTcRowSum>>);
}
CU
for side in BASE NEW; do
  tree=${!side}
  nice -n 10 nvcc -cubin -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -std=c++20 -O3 \
    -I"$tree/src" -I"$tree/include" -o "$TMP/$side.cubin" "$TMP/inst.cu"
  "${CUOBJDUMP:-cuobjdump}" -sass "$TMP/$side.cubin" | grep -E '^\s+/\*[0-9a-f]{4,}\*/' > "$TMP/$side.sass"
done
echo "command: $0 $*"
echo "base: $(git rev-parse --short=12 "$1"); new: $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD -- src include || echo -dirty)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); nvcc: $(nvcc --version | tail -1)"
for side in BASE NEW; do echo "$side: $(wc -l < "$TMP/$side.sass") instructions"; done
strip() { sed -E 's@/\*[0-9a-f]{4,}\*/@@; s@/\* 0x[0-9a-f]+ \*/@@; s@0x[0-9a-f]+@ADDR@g' "$1"; }
for side in BASE NEW; do
  echo "--- $side loops"; python3 "$NEW/tools/sass/loops.py" "$TMP/$side.sass" --min 200
done
if diff <(python3 "$NEW/tools/sass/loops.py" "$TMP/BASE.sass" --min 200) \
        <(python3 "$NEW/tools/sass/loops.py" "$TMP/NEW.sass" --min 200 ) > /dev/null; then
  echo "loops: identical opcode histograms"
else
  echo "loops: DIFFER"
fi
echo "--- instruction diff (addresses stripped), first 60 lines"
diff <(strip "$TMP/BASE.sass") <(strip "$TMP/NEW.sass") | head -60 || true
