#!/usr/bin/env bash
# Configures build/ (Release) and builds the targets named, or everything (the CUDA library, its
# probes and the GPU tests too when nvcc is present; a GPU is not needed to build).
#   scripts/build.sh                  # everything
#   scripts/build.sh fp8attn-eval     # only the CPU model and the CLI (what scripts/run.sh runs)
# BUILD_DIR (default build) and JOBS (default: all cores) change where and how wide.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
targets=()
for t in "$@"; do targets+=(--target "$t"); done
echo "build: configure $BUILD_DIR/"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
echo "build: compile ${*:-everything} (-j $JOBS)"
cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
