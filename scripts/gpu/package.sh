#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .carry/pkg/ staged by
# scripts/gpu/stage_package.sh: installs the wheel into a clean folder (no repository on the
# path, no FP8ATTN_LIB), then from /tmp runs bench/check_package.py (quick start, tests/python:
# validation, accuracy, inductor with dynamic shapes, CUDA graphs, opcheck; the transformers
# client). Writes $OUT/package.json (+ .junit.xml, .log). About 2-4 minutes.
set -uo pipefail
ROOT=$(pwd)
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
wheel=$(ls "$ROOT"/.carry/pkg/fp8attn-*.whl | head -1)
commit=$(cat "$ROOT/.carry/pkg/COMMIT" 2>/dev/null || echo unknown)
site=$(mktemp -d /tmp/fp8attn-site.XXXXXX)
python3 -m pip install -q --no-index --no-deps --target "$site" "$wheel" || exit 2
unset FP8ATTN_LIB
cd /tmp
PYTHONPATH="$site" timeout -k 10 "${PACKAGE_TIMEOUT_S:-255}" python3 "$ROOT/bench/check_package.py" \
  --repo "$ROOT" --commit "$commit" --out "$OUT/package.json" 2>&1 | tee "$OUT/package.log"
exit "${PIPESTATUS[0]}"
