#!/usr/bin/env bash
# Runs HERE (no GPU): builds libfp8attn.so, test_quant and test_quant_attention and copies them,
# with their runtime fallbacks and the commit, into CARRY for lab/probes/one_pass.sh.
#   bash lab/probes/one_pass_stage.sh [BUILD_DIR (build-stage)] [CARRY (.carry/one-pass)]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build-stage}
CARRY=${2:-.carry/one-pass}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DBLA_STATIC=OFF \
  -DBLAS_openblas_LIBRARY=/usr/lib/x86_64-linux-gnu/libopenblas.so >/dev/null
nice -n 10 cmake --build "$BUILD_DIR" -j 2 --target fp8attn test_quant test_quant_attention 2>&1 |
  grep -E "error|warning: Registers are spilled|Built target" || true
rm -rf "$CARRY"
mkdir -p "$CARRY/tests" "$CARRY/fallback/openblas" "$CARRY/fallback/gomp"
cp "$BUILD_DIR/src/libfp8attn.so" "$CARRY/"
cp "$BUILD_DIR/tests/test_quant" "$BUILD_DIR/tests/test_quant_attention" "$CARRY/tests/"
gcc -O2 -shared -fPIC -Wl,-soname,libopenblas.so.0 -o "$CARRY/fallback/openblas/libopenblas.so.0" \
  scripts/openblas_shim.c
cp -L /lib/x86_64-linux-gnu/libgomp.so.1 "$CARRY/fallback/gomp/"
commit=$(git rev-parse --short=12 HEAD)
[[ -n "$(git status --porcelain -- src model include tests CMakeLists.txt)" ]] && commit="$commit-dirty"
echo "$commit" > "$CARRY/COMMIT"
du -sh "$CARRY"
