#!/usr/bin/env bash
# The README's test command: build, then every CPU and GPU test through CTest.
# Without a GPU the GPU tests report themselves SKIPPED.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
cd build && ctest --output-on-failure -j "$(nproc)" "$@"
