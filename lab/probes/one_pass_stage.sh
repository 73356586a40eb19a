#!/usr/bin/env bash
# Runs HERE (no GPU): builds libfp8attn.so, test_quant and test_quant_attention and copies them,
# with their runtime fallbacks and the commit, into CARRY for lab/probes/one_pass.sh.
#   bash lab/probes/one_pass_stage.sh [BUILD_DIR (build-stage)] [CARRY (.carry/one-pass)]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${1:-build-stage}
CARRY=${2:-.carry/one-pass}
source lab/probes/carry.sh
carry_stage "$BUILD_DIR" "$CARRY" test_quant test_quant_attention
