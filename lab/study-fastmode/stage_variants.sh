#!/usr/bin/env bash
# Runs HERE (no GPU): builds the fast-mode variant libraries of issue 14 item 2 from this checkout
# for lab/probes/kernel_ab.py --variant-lib, each with the commit it was built from:
#   .carry/variants/o8s0/libfp8attn.so      this checkout as it is (branch fast14: P offset 8, an
#                                           exact running max, l the tensor core's sum of the
#                                           rounded P)
#   .carry/variants/o8s0-l32/libfp8attn.so  the same with lab/study-fastmode/variant-l-fp32.patch
#                                           (l from the FP32 p: kTcRowSum off, FA3's numerics)
#   .carry/variants/o8s0-l32-224/...        the same in 224-key blocks, FA3 FP8's tile
#                                           (variant-l-fp32-block224.patch)
# Each patch is applied for its build and reverted on exit, whatever happens.
#   lab/study-fastmode/stage_variants.sh [BUILD_ROOT]   (default build-variants/)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=${1:-build-variants}
patch=lab/study-fastmode/variant-l-fp32.patch
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd .. && pwd)}
if ! git diff --quiet -- src model include; then
  echo "stage_variants: src/, model/ or include/ has uncommitted changes; commit them first" >&2
  exit 1
fi
build() {  # NAME
  local b=$root/$1
  nice -n 10 cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=Release -DFP8ATTN_BUILD_TESTS=OFF \
    -DFP8ATTN_BUILD_MODEL=OFF -DFP8ATTN_BUILD_TOOLS=OFF -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache >/dev/null
  nice -n 10 cmake --build "$b" -j 2 --target fp8attn 2>&1 | grep -E "error|spill stores" \
    | grep -v " 0 bytes spill stores" | grep -i "attn4attn\|error" || true
  mkdir -p ".carry/variants/$1"
  cp "$b/src/libfp8attn.so" ".carry/variants/$1/libfp8attn.so"
  echo "$(git rev-parse --short=12 HEAD)${2:+ + $2}" > ".carry/variants/$1/COMMIT"
  echo "staged .carry/variants/$1 ($(cat ".carry/variants/$1/COMMIT"))"
}
build o8s0
git apply "$patch"
trap 'git apply -R "$patch"' EXIT
build o8s0-l32 "$patch"
git apply -R "$patch"
patch=lab/study-fastmode/variant-l-fp32-block224.patch
git apply "$patch"
build o8s0-l32-224 "$patch"
du -sh .carry/variants
