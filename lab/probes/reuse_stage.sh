#!/usr/bin/env bash
# Here (no GPU): the libraries of reuse_check.sh, packed as .carry/reuse.tar.xz: this tree's
# release library (rel/, with the fallback libraries) and two copies of it whose E4M3 192-key
# kernels (register and TMA-store epilogue) have the operand-reuse flags of their steady-state
# loop cleared (lab/sass/clear_reuse.py): on the FFMAs only (ffma/), on every instruction (loop/).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
source lab/probes/carry.sh
tmp=$(mktemp -d)
carry_stage build-stage "$tmp/rel" >/dev/null
rm -rf "$tmp/rel/tests"
for scope in ffma loop; do
  mkdir -p "$tmp/$scope"
  python3 lab/sass/clear_reuse.py "$tmp/rel/libfp8attn.so" "$tmp/$scope/a.so" --scope "$scope"
  python3 lab/sass/clear_reuse.py "$tmp/$scope/a.so" "$tmp/$scope/libfp8attn.so" --scope "$scope" \
    --config e4m3_block192_tma_store
  rm "$tmp/$scope/a.so"
  echo "$(cat "$tmp/rel/COMMIT") + clear_reuse --scope $scope (e4m3_block192, e4m3_block192_tma_store)" \
    > "$tmp/$scope/COMMIT"
done
mkdir -p .carry
tar -cJf "$root/.carry/reuse.tar.xz" -C "$tmp" rel ffma loop
rm -rf "$tmp"
du -sh "$root/.carry/reuse.tar.xz"
