#!/usr/bin/env bash
# Configures and builds everything into build/ (CUDA code too when nvcc is present).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
