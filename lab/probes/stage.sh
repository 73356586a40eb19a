#!/usr/bin/env bash
# Builds the probe here and copies what the GPU run needs into .carry/ (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake -S . -B build-lead -DCMAKE_BUILD_TYPE=Release -DFP8ATTN_BUILD_TESTS=OFF -DFP8ATTN_PROBE=ON >/dev/null
nice cmake --build build-lead -j2 --target kernel_probe
mkdir -p .carry
cp build-lead/lab/probes/kernel_probe build-lead/src/libfp8attn.so /lib/x86_64-linux-gnu/libgomp.so.1 .carry/
git rev-parse --short HEAD > .carry/COMMIT
du -sh .carry
