#!/usr/bin/env bash
# Runs HERE (no GPU): builds libfp8attn.so, test_quant_rope and test_quant (the no-rope pre-pass:
# its kernels gained the rope flag) and copies them, with their runtime fallbacks and the commit,
# into CARRY for lab/probes/rope.sh.
#   bash lab/probes/rope_stage.sh [BUILD_DIR (build-rope)] [CARRY (.carry/rope)]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build-rope}
CARRY=${2:-.carry/rope}
source lab/probes/carry.sh
carry_stage "$BUILD_DIR" "$CARRY" test_quant test_quant_rope
