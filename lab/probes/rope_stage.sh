#!/usr/bin/env bash
# Runs HERE (no GPU): builds libfp8attn.so, test_quant_rope and test_quant (the no-rope pre-pass:
# its kernels gained the rope flag) and copies them, with their runtime fallbacks and the commit,
# into CARRY for lab/probes/rope.sh.
#   bash lab/probes/rope_stage.sh [BUILD_DIR (build-rope)] [CARRY (.carry/rope)]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build-rope}
CARRY=${2:-.carry/rope}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-/work}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DBLA_STATIC=OFF \
  -DBLAS_openblas_LIBRARY=/usr/lib/x86_64-linux-gnu/libopenblas.so \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache >/dev/null
nice -n 10 cmake --build "$BUILD_DIR" -j 2 --target fp8attn test_quant test_quant_rope 2>&1 |
  grep -E "error|Built target" || true
rm -rf "$CARRY"
mkdir -p "$CARRY/tests" "$CARRY/fallback/openblas" "$CARRY/fallback/gomp"
cp "$BUILD_DIR/src/libfp8attn.so" "$CARRY/"
cp "$BUILD_DIR/tests/test_quant" "$BUILD_DIR/tests/test_quant_rope" "$CARRY/tests/"
gcc -O2 -shared -fPIC -Wl,-soname,libopenblas.so.0 -o "$CARRY/fallback/openblas/libopenblas.so.0" \
  scripts/openblas_shim.c
cp -L /lib/x86_64-linux-gnu/libgomp.so.1 "$CARRY/fallback/gomp/"
commit=$(git rev-parse --short=12 HEAD)
[[ -n "$(git status --porcelain -- src model include tests CMakeLists.txt)" ]] && commit="$commit-dirty"
echo "$commit" > "$CARRY/COMMIT"
du -sh "$CARRY"
