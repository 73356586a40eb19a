#!/usr/bin/env bash
# Runs HERE (no GPU needed): builds the wheel (`pip wheel . --no-deps`: libfp8attn.so for sm_90a
# inside python/fp8attn) into .carry/pkg/ with the commit it was built from, and prints its size.
# The GPU run is scripts/gpu/package.sh, with carry [".carry"].
#   CMAKE_ARGS="-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache" \
#     scripts/gpu/stage_package.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=.carry/pkg
rm -rf "$DEST" && mkdir -p "$DEST"
nice -n 10 python3 -m pip wheel . --no-deps -w "$DEST"
commit=$(git rev-parse --short=12 HEAD)
[[ -z "$(git status --porcelain -- src include python CMakeLists.txt pyproject.toml)" ]] ||
  commit="${commit}-dirty"
echo "$commit" > "$DEST/COMMIT"
ls -l "$DEST"
python3 -m zipfile -l "$DEST"/fp8attn-*.whl
du -sh "$DEST"
